// Package sysmon keeps the Go runtime's system monitor out of its deep
// sleep in a server process.
//
// The runtime's sysmon thread sleeps deeply while every P is idle, and the
// first system call after that wakes it and sets it ticking every 20 µs
// again. A server that waits on its store between requests (a round trip to
// PostgreSQL, say) goes idle and busy again several times per request, so
// each request paid for waking that thread and for its ticks: futex calls,
// nanosleeps and context switches. With a scheduler trace period set
// (GODEBUG=schedtrace), sysmon never sleeps deeply; its ticks lengthen to
// 10 ms while it finds nothing to do, and shorten again whenever it takes a
// P back from a blocking system call. The period chosen is the longest the
// runtime accepts, about 24.8 days, so the trace it prints is a line on
// standard error at start (on a host up for longer than that) and then
// every 24.8 days.
//
// The runtime reads that setting only at start, so Steady starts the
// program again, in place.
package sysmon

import (
	"os"
	"strings"
)

// Setting is the GODEBUG setting Steady adds.
const Setting = "schedtrace=2147483647"

// Env is env (KEY=VALUE entries) with Setting added to GODEBUG, and whether
// it was added: it is not when GODEBUG sets schedtrace already (an
// operator's choice stands, schedtrace=0 included).
func Env(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		val, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		if sets(val, "schedtrace") {
			return env, false
		}
		found = true
		if val == "" {
			out = append(out, "GODEBUG="+Setting)
		} else {
			out = append(out, "GODEBUG="+val+","+Setting)
		}
	}
	if !found {
		out = append(out, "GODEBUG="+Setting)
	}
	return out, true
}

// sets reports whether a GODEBUG value (key=value, comma-separated) sets
// key.
func sets(godebug, key string) bool {
	for _, field := range strings.Split(godebug, ",") {
		if k, _, ok := strings.Cut(field, "="); ok && strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}

// Steady starts this program again in place (the same process, its
// arguments and environment, with Setting added to GODEBUG) unless GODEBUG
// sets schedtrace already. It returns only when it did not: nothing to do,
// or an error (the program then runs on as it is; the error says why).
func Steady() error {
	env, add := Env(os.Environ())
	if !add {
		return nil
	}
	return execSelf(env)
}
