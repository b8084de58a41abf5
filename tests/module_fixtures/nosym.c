/* Test fixture: a valid shared library without any TVM FFI symbol. */
int plain_function(int x) { return x + 1; }
