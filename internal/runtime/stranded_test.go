package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// probeScript answers the watch's probes one by one and reports when each
// answer has been recorded.
type probeScript struct {
	answers chan probeAnswer
	asked   chan map[string][]int32
}

type probeAnswer struct {
	unstable map[string][]int32
	err      error
}

func (s *probeScript) probe(_ context.Context, parts map[string][]int32) (map[string][]int32, error) {
	s.asked <- parts
	a := <-s.answers
	return a.unstable, a.err
}

// step runs one check at now that must start a probe, answers it and waits
// until the answer is recorded.
func (s *probeScript) step(t *testing.T, w *strandedWatch, now time.Time, quiet map[string][]int32, a probeAnswer) {
	t.Helper()
	if err := w.check(context.Background(), now, quiet); err != nil {
		t.Fatalf("check at %s: %v", now.Format(time.TimeOnly), err)
	}
	select {
	case <-s.asked:
	case <-time.After(30 * time.Second): // a ceiling: a loaded -race run may be slow to schedule the probe
		t.Fatalf("check at %s started no probe", now.Format(time.TimeOnly))
	}
	s.answers <- a
	for {
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if !running {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStrandedWatch(t *testing.T) {
	const every, after = 5 * time.Second, 20 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	quiet := map[string][]int32{"in": {0, 1}}
	unstable0 := probeAnswer{unstable: map[string][]int32{"in": {0}}}

	t.Run("stays unstable past the limit", func(t *testing.T) {
		s := &probeScript{answers: make(chan probeAnswer), asked: make(chan map[string][]int32, 1)}
		w := newStrandedWatch(every, after, s.probe)
		for i := 0; i <= 4; i++ { // t0 .. t0+20s
			s.step(t, w, t0.Add(time.Duration(i)*every), quiet, unstable0)
		}
		err := w.check(context.Background(), t0.Add(21*time.Second), quiet)
		if !errors.Is(err, errStranded) {
			t.Fatalf("after %s of unstable answers: err = %v, want errStranded", after, err)
		}
	})

	t.Run("a stable answer starts the count again", func(t *testing.T) {
		s := &probeScript{answers: make(chan probeAnswer), asked: make(chan map[string][]int32, 1)}
		w := newStrandedWatch(every, after, s.probe)
		s.step(t, w, t0, quiet, unstable0)
		s.step(t, w, t0.Add(every), quiet, unstable0)
		s.step(t, w, t0.Add(2*every), quiet, probeAnswer{}) // settled by the broker
		for i := 3; i <= 6; i++ {                           // unstable again from t0+15s
			s.step(t, w, t0.Add(time.Duration(i)*every), quiet, unstable0)
		}
		if err := w.check(context.Background(), t0.Add(31*time.Second), quiet); err != nil {
			t.Fatalf("15s of unstable answers counted as stranded: %v", err)
		}
		s.step(t, w, t0.Add(35*time.Second), quiet, unstable0)
		if err := w.check(context.Background(), t0.Add(36*time.Second), quiet); !errors.Is(err, errStranded) {
			t.Fatalf("20s of unstable answers: err = %v, want errStranded", err)
		}
	})

	t.Run("failed probes prove nothing", func(t *testing.T) {
		s := &probeScript{answers: make(chan probeAnswer), asked: make(chan map[string][]int32, 1)}
		w := newStrandedWatch(every, after, s.probe)
		for i := 0; i <= 8; i++ {
			s.step(t, w, t0.Add(time.Duration(i)*every), quiet, probeAnswer{err: errors.New("broker unreachable")})
		}
		if err := w.check(context.Background(), t0.Add(50*time.Second), quiet); err != nil {
			t.Fatalf("probe errors counted as unstable answers: %v", err)
		}
	})

	t.Run("a partition that makes progress is not probed", func(t *testing.T) {
		s := &probeScript{answers: make(chan probeAnswer), asked: make(chan map[string][]int32, 1)}
		w := newStrandedWatch(every, after, s.probe)
		s.step(t, w, t0, quiet, unstable0)
		// Partition 0 made progress: nothing is quiet any more.
		for i := 1; i <= 8; i++ {
			if err := w.check(context.Background(), t0.Add(time.Duration(i)*every), nil); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.asked:
				t.Fatal("probed with no quiet partition")
			default:
			}
		}
		// Quiet again later: the old answer does not count.
		s.step(t, w, t0.Add(45*time.Second), quiet, unstable0)
		s.step(t, w, t0.Add(50*time.Second), quiet, unstable0)
		if err := w.check(context.Background(), t0.Add(54*time.Second), quiet); err != nil {
			t.Fatalf("an unstable answer from before the progress was counted: %v", err)
		}
	})

	t.Run("probes are spaced", func(t *testing.T) {
		s := &probeScript{answers: make(chan probeAnswer), asked: make(chan map[string][]int32, 1)}
		w := newStrandedWatch(every, after, s.probe)
		s.step(t, w, t0, quiet, unstable0)
		if err := w.check(context.Background(), t0.Add(every-time.Millisecond), quiet); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.asked:
			t.Fatal("probed again before the interval")
		default:
		}
	})
}
