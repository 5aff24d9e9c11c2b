package main

import (
	"bytes"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// peakHeapProfile keeps the heap profile of the moment the live heap was
// largest and writes it to path when stopped: what was in memory at the
// peak, not at the end of a run, when the input is drained and the
// buffers are empty. It samples the heap's object bytes every 50 ms and
// takes a new profile only when they grew by a tenth past the last one,
// so a run pays for a handful of profiles, not one per sample.
func peakHeapProfile(path string) (stop func() error) {
	done, finished := make(chan struct{}), make(chan struct{})
	var best bytes.Buffer
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak+peak/10 {
				peak = v
				best.Reset()
				_ = pprof.Lookup("heap").WriteTo(&best, 0)
			}
		}
	}()
	return func() error {
		close(done)
		<-finished
		return os.WriteFile(path, best.Bytes(), 0o644)
	}
}
