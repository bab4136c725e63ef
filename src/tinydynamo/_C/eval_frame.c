/* Placeholder replaced by the PEP 523 hook (chapter 2). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
python_version_hex(PyObject *self, PyObject *unused)
{
    return PyLong_FromUnsignedLong(PY_VERSION_HEX);
}

static PyMethodDef methods[] = {
    {"python_version_hex", python_version_hex, METH_NOARGS, "PY_VERSION_HEX this module was built against."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_eval_frame", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__eval_frame(void)
{
    return PyModule_Create(&module);
}
