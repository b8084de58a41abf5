"""tvmffi.stub: the official stub generator (``tvm-ffi-stubgen``) run on tvmffi.

``tvmffi.stub.*`` are the official ``tvm_ffi/stub`` source files of the installed
apache-tvm-ffi wheel, loaded with their ``import tvm_ffi...`` answered by tvmffi. These tests
check that wiring (the official files, tvmffi underneath, nothing of the official binding
imported, ``import tvmffi`` untouched), that the output is the official command's, and the
generator's behaviour as tvmffi users meet it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import run_python

import tvmffi
import tvmffi.cpp
import tvmffi.testing
from tvmffi.core import TypeSchema
from tvmffi.stub import consts as C
from tvmffi.stub import official_stub_dir
from tvmffi.stub.cli import _stage_3
from tvmffi.stub.file_utils import FileInfo
from tvmffi.stub.generator import get_generator
from tvmffi.stub.layout import ByteRange, classify
from tvmffi.stub.lib_state import collect_type_keys, object_info_from_type_key
from tvmffi.stub.utils import FuncInfo, ObjectInfo, Options

SRC = os.path.dirname(os.path.dirname(os.path.abspath(tvmffi.__file__)))
B, E = C.PYTHON_SYNTAX.begin, C.PYTHON_SYNTAX.end

USER_FILE = f'''"""A user module: everything outside the markers is theirs."""
{B} import-section
{E}
import os  # user import, kept


def helper() -> int:  # user code, kept byte for byte
    return 42

{B} global/testing
{E}


class TestIntPair:
    {B} object/testing.TestIntPair
    {E}

    def user_method(self) -> str:
        return "mine"


__all__ = [
    {B} __all__
    {E}
]
'''


def _stubgen(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "tvmffi.stub", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _official_command() -> str:
    """The official wheel's own ``tvm-ffi-stubgen`` script (apache-tvm-ffi is a dependency)."""
    official = shutil.which("tvm-ffi-stubgen", path=os.path.dirname(sys.executable))
    assert official is not None, "the apache-tvm-ffi wheel installs tvm-ffi-stubgen"
    return official


def _user_lines(text: str, syntax: C.MarkerSyntax = C.PYTHON_SYNTAX) -> list[str]:
    """The lines outside generated blocks (markers included)."""
    out, inside = [], False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(syntax.begin):
            out.append(line)
            inside = True
        elif s.startswith(syntax.end):
            out.append(line)
            inside = False
        elif not inside:
            out.append(line)
    return out


# ---- the wiring: official files, tvmffi underneath ----------------------------------------
def test_import_tvmffi_imports_neither_the_official_package_nor_the_generator() -> None:
    run = run_python(
        "import sys, tvmffi\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tvm_ffi'))\n"
        "print(sorted(m for m in sys.modules if m.startswith('tvmffi.stub')))\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["[]", "[]"]


def test_the_generator_is_the_official_code_running_on_tvmffi() -> None:
    code = textwrap.dedent(
        """
        import os, sys
        import tvmffi, tvmffi.core, tvmffi.registry
        import tvmffi.stub.cli as cli
        import tvmffi.stub.rust_generator.codegen
        from tvmffi.stub import lib_state, official_stub_dir, utils

        official = os.path.dirname(official_stub_dir())
        mods = list(sys.modules.items())
        files = {n: m.__file__ for n, m in mods if n.startswith("tvmffi.stub.")}
        # Every generator module is an official file; nothing else of the package is loaded.
        assert all(f.startswith(official_stub_dir() + os.sep) for f in files.values()), files
        others = [f for m in list(sys.modules.values())
                  if (f := getattr(m, "__file__", None) or "").startswith(official + os.sep)
                  and not f.startswith(official_stub_dir() + os.sep)]
        assert others == [], others
        assert not [m for m in sys.modules if m.split(".")[0] == "tvm_ffi"]
        # Their `tvm_ffi` is tvmffi.
        assert cli._object_type_key_to_index is tvmffi.core._object_type_key_to_index
        assert lib_state.TypeSchema is utils.TypeSchema is tvmffi.core.TypeSchema
        assert lib_state.get_global_func_metadata is tvmffi.registry.get_global_func_metadata
        print(len(files))
        """
    )
    run = run_python(code)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) >= 15  # cli, consts, ..., python_generator.*, rust_generator.*
    assert os.path.isfile(os.path.join(official_stub_dir(), "cli.py"))
    # tvmffi carries no generator code of its own.
    ours = Path(tvmffi.__file__).parent / "stub"
    assert sorted(p.name for p in ours.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_generates_stubs_keeps_user_code_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(USER_FILE, encoding="utf-8")
    os.chmod(path, 0o640)
    run = _stubgen(str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    text = path.read_text(encoding="utf-8")
    assert _user_lines(text) == _user_lines(USER_FILE)
    assert "    def add_one(_0: int, /) -> int: ..." in text
    assert '_FFI_INIT_FUNC("testing", __name__)' in text
    # The object block: fields, then the reflected init and methods.
    assert "    a: int" in text and "    b: int" in text
    assert "        def __ffi_init__(self, _0: int, _1: int, /) -> None: ..." in text
    assert "        def sum(self, /) -> int: ..." in text
    assert '    "add_one",' in text and '    "TestIntPair",' in text
    # A locally defined type is not imported; the file still compiles.
    assert "import TestIntPair" not in text
    compile(text, str(path), "exec")
    # Rewritten in place: no other file appears, the file's mode is kept.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mod.py"]
    assert path.stat().st_mode & 0o777 == 0o640
    # A second run changes nothing, and --check agrees the file is fresh.
    assert _stubgen(str(path)).returncode == 0
    assert path.read_text(encoding="utf-8") == text
    assert _stubgen("--check", str(path)).returncode == 0


def test_a_symlinked_file_is_written_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text(USER_FILE, encoding="utf-8")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    run = _stubgen(str(link))
    assert run.returncode == 0, run.stdout + run.stderr
    assert link.is_symlink()
    assert "    def add_one(_0: int, /) -> int: ..." in real.read_text(encoding="utf-8")


def test_check_reports_a_stale_file_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(USER_FILE, encoding="utf-8")
    run = _stubgen("--check", str(path))
    assert run.returncode == 1
    assert "[Stale]" in run.stdout and str(path) in run.stdout
    assert path.read_text(encoding="utf-8") == USER_FILE


def test_output_matches_the_official_generator(tmp_path: Path) -> None:
    official = _official_command()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for d in (ours, theirs):
        d.mkdir()
        (d / "mod.py").write_text(USER_FILE, encoding="utf-8")
    assert _stubgen(str(ours / "mod.py")).returncode == 0
    subprocess.run([official, str(theirs / "mod.py")], capture_output=True, check=True, timeout=120)
    assert (ours / "mod.py").read_text() == (theirs / "mod.py").read_text()
    # --init scaffolding, too.
    init = ["--init-pypkg", "demo-pkg", "--init-lib", "demo_shared", "--init-prefix", "testing"]
    assert _stubgen(*init, str(ours)).returncode == 0
    subprocess.run([official, *init, str(theirs)], capture_output=True, check=True, timeout=120)
    assert _tree(ours / "testing") == _tree(theirs / "testing")
    api = (ours / "testing" / "_ffi_api.py").read_text(encoding="utf-8")
    assert 'LIB = _FFI_LOAD_LIB("demo-pkg", "demo_shared")' in api


# A library of the user's own, built with tvmffi.cpp: a reflected class and global functions.
DEMO_LIB = r"""
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

namespace stub_demo {
using namespace tvm::ffi;

class PointObj : public Object {
 public:
  int64_t x;
  double y;
  PointObj(int64_t x, double y) : x(x), y(y) {}
  double Norm1() const { return static_cast<double>(x < 0 ? -x : x) + (y < 0 ? -y : y); }
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("stub_demo.Point", PointObj, Object);
};

int64_t Scale(int64_t value, double factor) { return static_cast<int64_t>(value * factor); }

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<PointObj>()
      .def(refl::init<int64_t, double>())
      .def_rw("x", &PointObj::x)
      .def_rw("y", &PointObj::y)
      .def("norm1", &PointObj::Norm1);
  refl::GlobalDef()
      .def("stub_demo.scale", Scale)
      .def("stub_demo.greet", [](String name) { return String("hello " + std::string(name)); });
}
}  // namespace stub_demo
"""
DEMO_INIT = ["--init-pypkg", "stub-demo", "--init-lib", "stub_demo", "--init-prefix", "stub_demo"]


@pytest.fixture(scope="module")
def demo_lib(tmp_path_factory: pytest.TempPathFactory) -> str:
    build = tmp_path_factory.mktemp("stub-demo-build")
    return tvmffi.cpp.build_inline("stub_demo", cpp_sources=DEMO_LIB, build_directory=str(build))


@pytest.fixture(scope="module")
def demo_stubs(demo_lib: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package tvmffi-stubgen scaffolds for the library (``stub_demo/``), under a root."""
    root = tmp_path_factory.mktemp("stub-demo-pkg")
    run = _stubgen("--dlls", demo_lib, *DEMO_INIT, str(root))
    assert run.returncode == 0, run.stdout + run.stderr
    return root


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_built_library_gets_the_official_tools_stubs(
    demo_lib: str, demo_stubs: Path, tmp_path: Path
) -> None:
    official = _official_command()
    cmd = [official, "--dlls", demo_lib, *DEMO_INIT, str(tmp_path)]
    subprocess.run(cmd, capture_output=True, check=True, timeout=120)
    ours = _tree(demo_stubs)
    assert ours == _tree(tmp_path)
    api = ours["stub_demo/_ffi_api.py"]
    assert "    def scale(_0: int, _1: float, /) -> int: ..." in api
    assert "    def greet(_0: str, /) -> str: ..." in api
    assert "class Point(_ffi_Object):" in api and "        def norm1(self, /) -> float: ..." in api
    # Run again on the scaffolded files: nothing changes (the official --check agrees).
    assert _stubgen("--dlls", demo_lib, str(demo_stubs)).returncode == 0
    assert _tree(demo_stubs) == ours
    cmd = [official, "--check", "--dlls", demo_lib, str(demo_stubs)]
    assert subprocess.run(cmd, capture_output=True, timeout=120).returncode == 0


def test_mypy_catches_a_wrong_argument_type_through_generated_stubs(demo_stubs: Path) -> None:
    pytest.importorskip("mypy")
    user = demo_stubs / "user.py"
    user.write_text(
        textwrap.dedent(
            """
            from stub_demo import Point, greet, scale

            n: int = scale(3, 1.5)
            s: str = greet("world")
            p = Point(1, 2.0)
            f: float = p.norm1() + p.y
            scale("three", 1.5)
            """
        ),
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, "user.py"],
        capture_output=True,
        text=True,
        cwd=demo_stubs,
        timeout=300,
    )
    # Exactly the wrong call is reported: the right ones type-check against the stubs.
    assert run.returncode == 1, run.stdout + run.stderr
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert errors == [
        'user.py:8: error: Argument 1 to "scale" has incompatible type "str"; expected "int"'
        "  [arg-type]"
    ]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([f"{B} global/a", f"{B} global/b", E], "Nested stub not permitted at line 2"),
        (["x = 1", E], "Unmatched `# tvm-ffi-stubgen\\(end\\)` found at line 2"),
        (["x = 1", f"{B} global/a"], "Unclosed stub block at end of file"),
        ([f"{B} nonsense/a", E], "Unknown stub type `nonsense/a` at line 1"),
        ([f"{C.PYTHON_SYNTAX.prefix}two words): x"], "Unknown stub type at line 1"),
    ],
)
def test_bad_markers_are_errors_naming_the_line(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "bad.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        FileInfo.from_file(path)


def test_a_bad_file_fails_the_run_but_not_the_others(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(f"{B} global/testing\n{E}\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad_text = f"{C.PYTHON_SYNTAX.ty_map} no arrow here\n{B} global/testing\n{E}\n"
    bad.write_text(bad_text, encoding="utf-8")
    run = _stubgen(str(tmp_path))
    assert run.returncode == 2
    assert f'[Failed] File "{bad.resolve()}"' in run.stdout
    assert "Invalid ty_map format at line 1" in run.stdout
    assert "def add_one" in good.read_text(encoding="utf-8")


def test_unparsable_files_are_reported_and_left_alone(tmp_path: Path) -> None:
    nested = tmp_path / "nested.py"
    nested.write_text(f"{B} global/testing\n{B} global/testing\n{E}\n", encoding="utf-8")
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\xff\xfe" + f"{B} global/testing\n{E}\n".encode())
    good = tmp_path / "good.py"
    good.write_text(f"{B} global/testing\n{E}\n", encoding="utf-8")
    run = _stubgen(str(tmp_path))
    # As the official tool does: each is reported with its cause and skipped (exit status 0).
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ValueError: Nested stub not permitted at line 2" in run.stdout
    assert "UnicodeDecodeError" in run.stdout
    assert "def add_one" in good.read_text(encoding="utf-8")
    assert nested.read_text(encoding="utf-8").count(B) == 2  # left as it was
    assert binary.read_bytes().startswith(b"\xff\xfe")


def test_libraries_that_cannot_be_loaded_fail_the_run_naming_them(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(f"{B} global/testing\n{E}\n", encoding="utf-8")
    run = _stubgen("--dlls", str(tmp_path / "no_such_lib.so"), str(good))
    assert run.returncode != 0 and "no_such_lib.so" in run.stderr
    run = _stubgen("--imports", "no_such_module_xyz", str(good))
    assert run.returncode != 0 and "No module named 'no_such_module_xyz'" in run.stderr
    assert "def add_one" not in good.read_text(encoding="utf-8")


def test_unknown_directive_and_unregistered_type_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(f"{C.PYTHON_SYNTAX.directive('bogus')} x\n", encoding="utf-8")
    info = FileInfo.from_file(path)
    assert info is not None
    python = get_generator("python")
    with pytest.raises(ValueError, match="Unknown directive `bogus` at line 1"):
        _stage_3(info, Options(dry_run=True), python.default_ty_map(), {}, python)
    path.write_text(f"{B} object/testing.NoSuchType\n{E}\n", encoding="utf-8")
    info = FileInfo.from_file(path)
    assert info is not None
    with pytest.raises(ValueError, match=r"object/testing.NoSuchType` \(line 1\).*no longer"):
        _stage_3(info, Options(dry_run=True), python.default_ty_map(), {}, python)


def test_ty_map_renames_and_imports(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(
        f"{C.PYTHON_SYNTAX.ty_map} testing.TestIntPair -> mypkg.Pair\n"
        f"{B} import-section\n{E}\n{B} global/testing\n{E}\n",
        encoding="utf-8",
    )
    assert _stubgen(str(path)).returncode == 0
    text = path.read_text(encoding="utf-8")
    assert "    from mypkg import Pair" in text
    assert "def TestIntPairSum(_0: Pair, /) -> int: ..." in text


def test_type_schema_official_normal_form() -> None:
    flat = TypeSchema("Callable", (TypeSchema("int"), TypeSchema("str")))
    assert flat.args == ()
    assert flat.named_args == {"return": (TypeSchema("int"),), "params": (TypeSchema("str"),)}
    assert flat.repr() == "Callable[[str], int]"
    assert TypeSchema("Callable", (TypeSchema("int"),)).repr() == "Callable[..., int]"
    assert TypeSchema("List").args == (TypeSchema("Any"),)
    assert TypeSchema("Map").repr() == "Map[Any, Any]"
    with pytest.raises(ValueError, match="Map must have 0 or 2"):
        TypeSchema("Map", (TypeSchema("int"),))
    with pytest.raises(ValueError, match="nonempty"):
        TypeSchema("")
    lst = TypeSchema.from_json_str('{"type": "ffi.List", "args": [{"type": "int"}]}')
    names = {"List": "MutableSequence"}
    assert lst.output_repr(lambda t: names.get(t, t)) == "MutableSequence[int]"
    assert lst.input_repr(lambda t: {"List": "Sequence"}.get(t, t)) == "Sequence[int]"
    assert TypeSchema.from_json_str('{"type": "void*"}').origin == "ctypes.c_void_p"
    assert TypeSchema.from_json_str('{"type": "ffi.BigInt"}').type_key == "ffi.BigInt"
    assert TypeSchema.from_json_str('{"type": "ffi.String"}').type_key is None


def test_object_info_reads_native_layout_facts() -> None:
    base = ObjectInfo.from_type_info(tvmffi.testing._TestCxxClassBase.__tvm_ffi_type_info__)
    assert base.ancestors == ["ffi.Object"] and base.total_size == 40
    assert [(f.name, f.size, f.alignment, f.offset) for f in base.fields] == [
        ("v_i64", 8, 8, 24),
        ("v_i32", 4, 4, 32),
    ]
    assert object_info_from_type_key("ffi.Function").total_size is None
    with pytest.raises(ValueError, match="NoSuchType"):
        object_info_from_type_key("testing.NoSuchType")


def test_coverage_report_classifies_the_registry(tmp_path: Path) -> None:
    out = tmp_path / "coverage.json"
    run = _stubgen("--coverage-out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["testing.TestCxxClassBase"]["verdict"] == "complete"
    assert report["testing.TestCxxClassHiddenField"]["uncovered"] == [[32, 40]]
    infos = {k: object_info_from_type_key(k) for ks in collect_type_keys().values() for k in ks}
    verdicts = classify(infos)
    assert verdicts["testing.TestCxxClassDerived"].own_bytes == ByteRange(40, 56)
    assert verdicts["ffi.Function"].reason == "layout-unknown"


def test_command_is_installed_under_tvmffis_name() -> None:
    scripts = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts.get("tvmffi-stubgen") == "tvmffi.stub.cli:__main__"
    # The official wheel's own script is left alone.
    assert scripts.get("tvm-ffi-stubgen") == "tvm_ffi.stub.cli:__main__"
    run = _stubgen()
    assert run.returncode == 1 and "usage: tvm-ffi-stubgen" in run.stdout


# ---- the Rust target ---------------------------------------------------------------------
RB, RE = C.RUST_SYNTAX.begin, C.RUST_SYNTAX.end
RUST_FILE = f"""//! a user crate
{RB} import-section
{RE}

pub fn user_code() -> i32 {{
    1
}}

{RB} object/testing.TestCxxClassBase
{RE}

{RB} object/testing.TestCxxClassDerived
{RE}

{RB} object/testing.TestCxxClassHiddenField
{RE}
"""


def _crate(root: Path, text: str = RUST_FILE) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "demo"\n', encoding="utf-8")
    lib = root / "src" / "lib.rs"
    lib.write_text(text, encoding="utf-8")
    return lib


def test_rust_bindings_mirror_complete_layouts(tmp_path: Path) -> None:
    lib = _crate(tmp_path)
    run = _stubgen("--target", "rust", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    text = lib.read_text(encoding="utf-8")
    assert _user_lines(text, C.RUST_SYNTAX) == _user_lines(RUST_FILE, C.RUST_SYNTAX)
    # A complete type mirrors every field, pinned by its native size.
    assert "pub struct TestCxxClassBaseObj {\n    base: Object,\n    pub v_i64: i64,\n" in text
    assert "assert!(::core::mem::size_of::<TestCxxClassDerivedObj>() == 56);" in text
    assert "    base: TestCxxClassBaseObj,\n    pub v_f64: f64,\n    pub v_f32: f32," in text
    # A hidden member makes a type opaque: fields are read through the C ABI getter.
    assert "/// Opaque: bytes [32, 40) of [24, 48) are not accounted for" in text
    assert 'FieldGetter::new(Self::type_index(), "v_i32")?' in text
    assert "tvm_ffi::impl_object_upcast!(TestCxxClassDerived => TestCxxClassBase);" in text
    assert "use tvm_ffi::FieldGetter;" in text
    # Idempotent, and --check agrees.
    assert _stubgen("--target", "rust", str(tmp_path)).returncode == 0
    assert lib.read_text(encoding="utf-8") == text
    assert _stubgen("--target", "rust", "--check", str(tmp_path)).returncode == 0


def test_rust_output_matches_the_official_generator(tmp_path: Path) -> None:
    official = _official_command()
    ours, theirs = _crate(tmp_path / "ours"), _crate(tmp_path / "theirs")
    assert _stubgen("--target", "rust", str(ours)).returncode == 0
    cmd = [official, "--target", "rust", str(theirs)]
    subprocess.run(cmd, capture_output=True, check=True, timeout=120)
    assert ours.read_text() == theirs.read_text()


def test_rust_bad_directives_and_missing_types_are_errors(tmp_path: Path) -> None:
    lib = _crate(
        tmp_path,
        f"{C.RUST_SYNTAX.directive('enum')} testing.TestCxxClassDerived.v_f32 -> Kind(i64)\n"
        + RUST_FILE,
    )
    run = _stubgen("--target", "rust", str(tmp_path))
    assert run.returncode == 2
    assert f'[Failed] File "{lib.resolve()}"' in run.stdout
    assert "maps a 4-byte field to `i64` (8 bytes)" in run.stdout
    lib.write_text(f"{C.RUST_SYNTAX.directive('nullable')} no_dot_here\n", encoding="utf-8")
    run = _stubgen("--target", "rust", str(tmp_path))
    assert run.returncode == 2 and "Invalid `nullable` directive at line 1" in run.stdout
    # A derived type whose parent has no block in the run names what it depends on.
    lib.write_text(f"{RB} object/testing.TestCxxClassDerived\n{RE}\n", encoding="utf-8")
    run = _stubgen("--target", "rust", str(tmp_path))
    assert run.returncode == 2
    assert "depends on `testing.TestCxxClassBase`, which this run does not ask for" in run.stdout
    assert lib.read_text(encoding="utf-8") == f"{RB} object/testing.TestCxxClassDerived\n{RE}\n"


# ---- properties of the file model ----------------------------------------------------------
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# User text: anything on a line but a marker.
_plain = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    ),
    max_size=30,
).filter(lambda s: "tvm-ffi-stubgen(" not in s)
_indent = st.sampled_from(["", "  ", "    "])


@st.composite
def _marked_file(draw: st.DrawFn) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["plain", "block", "directive"]))
        if kind == "plain":
            lines.append(draw(_plain))
        elif kind == "directive":
            lines.append(draw(_indent) + f"{C.PYTHON_SYNTAX.ty_map} a.B -> c.D")
        else:
            pad = draw(_indent)
            lines.append(pad + f"{B} global/testing")
            lines += draw(st.lists(_plain, max_size=3))
            lines.append(pad + E)
    return lines


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=_marked_file())
def test_generation_never_touches_lines_outside_blocks(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "prop.py"
    text = "".join(line + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    info = FileInfo.from_file(path, include_empty=True)
    assert info is not None
    assert [x for b in info.code_blocks for x in b.lines] == lines  # parsing loses nothing
    python = get_generator("python")
    funcs = {"testing": [_ADD_ONE]}
    _stage_3(info, Options(dry_run=True), python.default_ty_map(), funcs, python)
    assert _user_lines("\n".join(info.lines)) == _user_lines("\n".join(lines))
    if any(line.strip().startswith(B) for line in lines):
        assert any(x.endswith("    def add_one(_0: int, /) -> int: ...") for x in info.lines)
    assert path.read_text(encoding="utf-8") == text  # a dry run writes nothing


_ADD_ONE = FuncInfo.from_schema(
    "testing.add_one",
    TypeSchema.from_json_str(tvmffi.get_global_func_metadata("testing.add_one")["type_schema"]),
)


_marker_soup = st.lists(
    st.one_of(
        _plain,
        st.sampled_from(
            [
                f"{B} global/x",
                f"{B} object/a.B",
                f"{B} import-section",
                f"{B} bogus",
                E,
                f"{C.PYTHON_SYNTAX.prefix}",
                f"{C.PYTHON_SYNTAX.prefix}x):",
                f"{C.PYTHON_SYNTAX.prefix}a b): c",
                C.PYTHON_SYNTAX.skip_file,
            ]
        ),
    ),
    max_size=8,
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=_marker_soup)
@example(lines=[f"{B} global/x", f"{C.PYTHON_SYNTAX.prefix}x):", E])  # directive inside a block
def test_any_marker_soup_parses_or_is_a_value_error(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "soup.py"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    try:
        info = FileInfo.from_file(path)
    except ValueError as err:
        assert "line" in str(err) or "end of file" in str(err)
    else:
        if info is not None:
            # No line is lost (a directive inside a block is set before it, as officially).
            assert sorted(x for b in info.code_blocks for x in b.lines) == sorted(lines)


@pytest.mark.parametrize("target", ["python", "rust"])
def test_tvm_ir_bindings_match_the_official_generator(tmp_path: Path, target: str) -> None:
    """A real client's registry (Apache TVM's `ir` namespace): every object and function."""
    pytest.importorskip("tvm")
    official = _official_command()
    args = ["--target", target, "--imports", "tvm"]
    args += ["--init-pypkg", "x", "--init-lib", "y", "--init-prefix", "ir"]
    out: dict[str, dict[str, str]] = {}
    for who in ("ours", "theirs"):
        root = tmp_path / who
        (root / "src").mkdir(parents=True)
        (root / "Cargo.toml").write_text("", encoding="utf-8")
        dest = str(root / "src")
        if who == "ours":
            run = _stubgen(*args, dest)
            assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        else:
            subprocess.run([official, *args, dest], capture_output=True, check=True, timeout=300)
        out[who] = {
            str(p.relative_to(root)): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }
    assert out["ours"] == out["theirs"]
    api = out["ours"]["src/ir/_ffi_api.py" if target == "python" else "src/ir/mod.rs"]
    assert api.count("tvm-ffi-stubgen(begin): object/ir.") > 20
