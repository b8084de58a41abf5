"""xgrammar hosted on tvmffi: a JSON-schema grammar guides decoding over a small vocabulary.

Run with TVMFFI_HOST=1. xgrammar loads its library with ``libinfo.load_lib_module``,
registers its objects and errors, and fills DLPack token bitmasks (torch, CPU).
Prints OK at the end.
"""

from __future__ import annotations

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import xgrammar as xgr
from _common import check_hosted

vocab = ["<s>", "</s>", "{", "}", '"', "a", ":", "1", ",", " ", "[", "]", "true", "x"]
info = xgr.TokenizerInfo(vocab, stop_token_ids=[1])
compiler = xgr.GrammarCompiler(info, max_threads=1)
schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
matcher = xgr.GrammarMatcher(compiler.compile_json_schema(json.dumps(schema)))
bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
allowed = []
for token in ["{", '"', "a", '"', ":", "1", "}"]:
    matcher.fill_next_token_bitmask(bitmask)
    logits = torch.zeros(1, info.vocab_size)
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    allowed.append([vocab[i] for i in range(len(vocab)) if logits[0, i] != float("-inf")])
    assert matcher.accept_token(vocab.index(token)), token
assert allowed == [["{"], ['"', " "], ["a"], ['"'], [":", " "], ["1", " "], ["}", "1", " "]], (
    allowed
)
assert not matcher.is_terminated() and matcher.accept_token(1) and matcher.is_terminated()
assert str(xgr.Grammar.from_ebnf('root ::= "a" | "b"')) == 'root ::= (("a") | ("b"))\n'
try:
    xgr.Grammar.from_ebnf("root ::= ")
except RuntimeError as err:
    assert "EBNF parser error" in str(err), err
else:
    raise AssertionError("a bad grammar was accepted")
check_hosted()
print("OK")
