// weft-peer-go: Go's goroutines as a peer of weft-bench (bench/peers_go.c
// runs it). One benchmark per process, so that the Go runtime's settings
// (GOMAXPROCS) and peak RSS belong to that benchmark alone:
//
//	weft-peer-go BENCH N
//
// prints "elapsed_ns=E pre_rss_kb=R block_ns=B" on stdout: the wall time of
// the N operations, the process's resident memory before them, and (alive)
// the time until all N goroutines had started; or an error on stderr with
// exit status 1. Only the standard library: it builds offline.
//
//	create_join    N times: start a goroutine, wait until it has finished
//	               (a channel receive), as weft_create + weft_join
//	yield          2 goroutines each call runtime.Gosched N times, one P
//	               (GOMAXPROCS=1): 2N switches
//	chan_pingpong  N round trips over two unbuffered channels, one P
//	cond_pingpong  N round trips of mutex + condition variable turn-taking
//	               (sync.Mutex, two sync.Cond), one P
//	mutex_hammer   64 goroutines lock one sync.Mutex, increment a counter
//	               and mix it into a hash, unlock, N/64 times each, with
//	               GOMAXPROCS as the caller sets it (weft-bench: the CPUs)
//	alive          N goroutines started, each blocks on a channel until all
//	               have started; then all are released and waited for
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func createJoin(n int) {
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() { done <- struct{}{} }()
		<-done
	}
}

func yield(n int) {
	runtime.GOMAXPROCS(1)
	var wg sync.WaitGroup
	wg.Add(2)
	for k := 0; k < 2; k++ {
		go func() {
			for i := 0; i < n; i++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
}

func chanPingPong(n int) {
	runtime.GOMAXPROCS(1)
	a, b := make(chan int), make(chan int)
	go func() {
		for v := range a {
			b <- v
		}
		close(b)
	}()
	for i := 0; i < n; i++ {
		a <- i
		<-b
	}
	close(a)
}

func condPingPong(n int) {
	runtime.GOMAXPROCS(1)
	var mu sync.Mutex
	c := [2]*sync.Cond{sync.NewCond(&mu), sync.NewCond(&mu)}
	turn := 0
	var wg sync.WaitGroup
	wg.Add(2)
	for p := 0; p < 2; p++ {
		go func(me int) {
			mu.Lock()
			for i := 0; i < n; i++ {
				for turn != me {
					c[me].Wait()
				}
				turn = 1 - me
				c[1-me].Signal()
			}
			mu.Unlock()
			wg.Done()
		}(p)
	}
	wg.Wait()
}

func mutexHammer(n int) error {
	const threads = 64
	per := n / threads
	if per < 1 {
		per = 1
	}
	var mu sync.Mutex
	var counter int64
	var mix uint64
	var start, wg sync.WaitGroup
	start.Add(1)
	wg.Add(threads)
	for t := 0; t < threads; t++ {
		go func() {
			start.Wait()
			for i := 0; i < per; i++ {
				mu.Lock()
				counter++
				mix = mix*6364136223846793005 + uint64(counter)
				mu.Unlock()
			}
			wg.Done()
		}()
	}
	start.Done()
	wg.Wait()
	if counter != int64(per*threads) {
		return fmt.Errorf("counter %d, expected %d", counter, per*threads)
	}
	return nil
}

func alive(n int, t0 time.Time) time.Duration {
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			started.Done()
			<-release
			done.Done()
		}()
	}
	started.Wait()
	block := time.Since(t0)
	close(release)
	done.Wait()
	return block
}

// The process's resident set (VmRSS) in KiB, or -1.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					return v
				}
			}
		}
	}
	return -1
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: weft-peer-go create_join|yield|chan_pingpong|cond_pingpong|mutex_hammer|alive N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "weft-peer-go: N must be a positive integer")
		os.Exit(2)
	}
	pre := rssKB()
	var block time.Duration
	t0 := time.Now()
	switch os.Args[1] {
	case "create_join":
		createJoin(n)
	case "yield":
		yield(n)
	case "chan_pingpong":
		chanPingPong(n)
	case "cond_pingpong":
		condPingPong(n)
	case "mutex_hammer":
		err = mutexHammer(n)
	case "alive":
		block = alive(n, t0)
	default:
		fmt.Fprintln(os.Stderr, "weft-peer-go: unknown benchmark", os.Args[1])
		os.Exit(2)
	}
	el := time.Since(t0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weft-peer-go:", err)
		os.Exit(1)
	}
	fmt.Printf("elapsed_ns=%d pre_rss_kb=%d block_ns=%d\n", el.Nanoseconds(), pre, block.Nanoseconds())
}
