/* torchport.runtime._speedups: the runtime's hot paths in C (python/torchport/runtime/_args.py imports it;
 * the pure-Python code is the fallback when it is absent, and tests/python/test_runtime_speedups.py
 * checks that both give the same values and log lines).
 *
 * Python's limited API (abi3, >= 3.9): one wheel serves every CPython from 3.9 on.
 *
 * DeviceMeta: the base of the metaclass of the torch.device stand-in
 * (python/torchport/runtime/_args.py, _install_device_type). Its call is the stand-in's call: the
 * class attribute _tp_device_call holds (kept, before, rest, limit). A call with a string, or a
 * string and an int (exact types), is answered from `kept` (a dict keyed by the argument tuple),
 * else built by `before` (the torch.device it replaced) and kept while `kept` holds fewer than
 * `limit` entries; another call without keywords and with other than one argument goes to `before`;
 * everything else (a single non-string argument, keywords: the bare index that is mapped) to
 * `rest`, the Python code. */

#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject* state_name; /* "_tp_device_call", interned */

static PyObject* device_meta_call(PyObject* cls, PyObject* args, PyObject* kwds) {
  PyObject* state = PyObject_GetAttr(cls, state_name);
  if (state == NULL) return NULL;
  if (!PyTuple_Check(state) || PyTuple_Size(state) != 4) {
    Py_DECREF(state);
    PyErr_SetString(PyExc_TypeError, "_tp_device_call must be a tuple (kept, before, rest, limit)");
    return NULL;
  }
  PyObject* kept = PyTuple_GetItem(state, 0);
  PyObject* before = PyTuple_GetItem(state, 1);
  PyObject* rest = PyTuple_GetItem(state, 2);
  PyObject* result = NULL;
  if (!PyDict_Check(kept)) {
    PyErr_SetString(PyExc_TypeError, "_tp_device_call[0] must be a dict");
    goto done;
  }
  if (kwds == NULL || PyDict_Size(kwds) == 0) {
    Py_ssize_t n = PyTuple_Size(args);
    PyObject* a0 = n >= 1 ? PyTuple_GetItem(args, 0) : NULL;
    int keyed =
        n == 1 ? PyUnicode_CheckExact(a0)
               : n == 2 && PyUnicode_CheckExact(a0) && PyLong_CheckExact(PyTuple_GetItem(args, 1));
    if (keyed) {
      result = PyDict_GetItemWithError(kept, args); /* borrowed */
      if (result != NULL) {
        Py_INCREF(result);
        goto done;
      }
      if (PyErr_Occurred()) goto done;
      result = PyObject_Call(before, args, NULL);
      if (result != NULL) {
        Py_ssize_t limit = PyLong_AsSsize_t(PyTuple_GetItem(state, 3));
        if (limit == -1 && PyErr_Occurred()) {
          Py_CLEAR(result);
        } else if (PyDict_Size(kept) < limit && PyDict_SetItem(kept, args, result) < 0) {
          Py_CLEAR(result);
        }
      }
      goto done;
    }
    if (n != 1) {
      result = PyObject_Call(before, args, NULL);
      goto done;
    }
  }
  result = PyObject_Call(rest, args, kwds);
done:
  Py_DECREF(state);
  return result;
}

static PyType_Slot device_meta_slots[] = {
    {Py_tp_call, (void*)device_meta_call},
    {Py_tp_doc,
     (void*)"Base of the torch.device stand-in's metaclass: its call, in C (torchport)."},
    {0, NULL},
};

static PyType_Spec device_meta_spec = {
    "torchport.runtime._speedups.DeviceMeta",
    0, /* the size of `type`'s instances */
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    device_meta_slots,
};

static int speedups_exec(PyObject* module) {
  if (state_name == NULL) {
    state_name = PyUnicode_InternFromString("_tp_device_call");
    if (state_name == NULL) return -1;
  }
  PyObject* bases = PyTuple_Pack(1, (PyObject*)&PyType_Type);
  if (bases == NULL) return -1;
  PyObject* meta = PyType_FromSpecWithBases(&device_meta_spec, bases);
  Py_DECREF(bases);
  if (meta == NULL) return -1;
  if (PyModule_AddObject(module, "DeviceMeta", meta) < 0) {
    Py_DECREF(meta);
    return -1;
  }
  return 0;
}

static PyModuleDef_Slot speedups_slots[] = {
    {Py_mod_exec, (void*)speedups_exec},
    {0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    "_speedups",
    "torchport's runtime hot paths in C (the pure-Python code is the fallback).",
    0,
    NULL,
    speedups_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModuleDef_Init(&speedups_module); }
