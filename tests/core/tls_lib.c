/* A library test_tls loads with dlopen: a __thread variable in dynamic TLS
 * (the global-dynamic model, each thread's copy found through its DTV by
 * __tls_get_addr), with an initializer so that a thread's first use shows
 * whether its copy was made from the library's TLS image. */
#define TLS_LIB_INITIAL 7

static __thread int tls_lib_value = TLS_LIB_INITIAL;

/* The calling thread's copy of the variable. */
__attribute__((visibility("default"))) int *tls_lib_counter(void)
{
	return &tls_lib_value;
}
