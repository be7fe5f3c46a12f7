/* A module for test_px_tls to dlopen: thread-locals in the global-dynamic
 * model, the default for a dlopened library, reached through
 * __tls_get_addr and the calling thread's dynamic-TLS vector. Built twice
 * (px_tls_lib_early, px_tls_lib_late) so that one copy can be loaded before
 * a test's threads exist and the other while they do. */

#define PX_TLS_LIB_VALUE 0x4c6962 /* "Lib" */

__attribute__((tls_model("global-dynamic"))) __thread int px_tls_lib_value = PX_TLS_LIB_VALUE;
__attribute__((tls_model("global-dynamic"))) __thread char px_tls_lib_name[64] = "px_tls_lib";
__attribute__((tls_model("global-dynamic"))) __thread long px_tls_lib_zero[64];

/* The calling thread's copies (noinline: every call asks __tls_get_addr). */
__attribute__((noinline)) int *px_tls_lib_value_addr(void)
{
	return &px_tls_lib_value;
}

__attribute__((noinline)) char *px_tls_lib_name_addr(void)
{
	return px_tls_lib_name;
}

__attribute__((noinline)) long *px_tls_lib_zero_addr(void)
{
	return px_tls_lib_zero;
}

/* The initial value of px_tls_lib_value, for the test to compare with. */
int px_tls_lib_initial(void)
{
	return PX_TLS_LIB_VALUE;
}
