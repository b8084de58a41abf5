/*
 * The compiled form of a TypeSchema (type_plan.c builds it, type_apply.c runs it).
 *
 * A plan is a flat array of nodes in pre-order, node 0 the root; a node's
 * children are a run of indices in `children`. Every node is a kind (what the
 * value must be and how it is cast), a target type index for object kinds, and
 * the schema text used in "expected X" messages. Plans never change once built,
 * so threads share them without locks.
 */
#ifndef TVMFFI_TYPE_PLAN_H_
#define TVMFFI_TYPE_PLAN_H_

#include "core.h"

typedef enum {
  TP_ANY = 0,
  TP_NONE,
  TP_INT,
  TP_BOOL,
  TP_FLOAT,
  TP_STR,
  TP_BYTES,
  TP_DTYPE,
  TP_DEVICE,
  TP_OPAQUE_PTR,
  TP_TENSOR,
  TP_CALLABLE,
  TP_OBJECT,   /* an instance of `type_index` (or what its payload hook / __ffi_convert__ gives) */
  TP_ARRAY,    /* child: element */
  TP_LIST,     /* child: element */
  TP_MAP,      /* children: key, value */
  TP_DICT,     /* children: key, value */
  TP_TUPLE,    /* children: one per position; nchild -1 for a bare tuple */
  TP_OPTIONAL, /* child: the type when not None */
  TP_UNION,    /* children: the alternatives, first match wins */
} TPKind;

typedef struct {
  TPKind kind;
  int32_t type_index; /* TP_OBJECT: the target; TP_INT: kTVMFFIBigInt when any int fits */
  int32_t nchild;
  int32_t first_child; /* into TypeConverterObject.children */
  PyObject* text;      /* owned: what "expected X" says (a container: its origin) */
  PyObject* hook;      /* owned or NULL, TP_OBJECT: payload (int/str) -> instance or None */
} TPNode;

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int32_t nnodes;
  TPNode* nodes;
  int32_t* children;
  PyObject* repr; /* owned: the whole schema's text, for "type check failed for X" */
} TypeConverterObject;

extern PyTypeObject TVMFFITypeConverterType;

static inline const TPNode* tp_child(const TypeConverterObject* c, const TPNode* n, int32_t i) {
  return &c->nodes[c->children[n->first_child + i]];
}

/* type_apply.c. Each returns 0 with *out owned, or -1 with a Python exception:
 * a TypeError carrying only the reason ("element [1]: expected int, got str"). */
/* A view (a field setter's input, an element) converted by node n. `py`, when
 * not NULL, is the Python value `in` was packed from: errors name its type. */
int tp_apply_any(const TypeConverterObject* c, const TPNode* n, const TVMFFIAny* in,
                 TVMFFIAny* out, PyObject* py);
/* A Python value: its conversion protocols unwrapped, packed by any.c, then applied. */
int tp_apply_py(const TypeConverterObject* c, PyObject* value, TVMFFIAny* out);
/* 1 with *out set when node n settles `in` without Python (no GIL needed), else 0. */
int tp_apply_plain(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out);

/* cany.c */
PyObject* tvmffi_cany_from_owned(TVMFFIAny* value); /* takes the value's reference */
PyObject* tvmffi_any_to_py_class(const TVMFFIAny* value);

#endif /* TVMFFI_TYPE_PLAN_H_ */
