/* An OpenMP program (gcc -fopenmp): parallel loops with reductions,
 * barriers, a critical section and single, with more threads than weft's
 * workers. libgomp's threads spin and then wait on futexes with system
 * calls of their own (no libc call weft could see): on weft they give the
 * worker up through preemption (src/sched/preempt.c). */
#include <omp.h>
#include <stdio.h>

int main(void)
{
	long sum = 0, crit = 0;
	int singles = 0;
	double x = 0;
	for (int rep = 0; rep < 10; rep++) {
#pragma omp parallel for num_threads(4) reduction(+ : sum) schedule(static)
		for (long i = 0; i < 200000; i++)
			sum += i % 7;
#pragma omp parallel num_threads(4) reduction(+ : x)
		{
			x += omp_get_thread_num();
#pragma omp barrier
#pragma omp critical
			crit += omp_get_num_threads();
#pragma omp single
			singles++;
			x += 1;
		}
	}
	printf("sum %ld x %.0f critical %ld single %d\n", sum, x, crit, singles);
	return 0;
}
