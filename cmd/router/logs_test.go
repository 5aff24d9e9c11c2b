package main

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestIdleRunLogsNothingPerCommit runs `router run` on kfake with an idle
// input and counts the INFO lines it writes once it has joined: a healthy
// router committing every 100ms must write none, while the join itself
// stays visible. The observation window is fixed because the quantity
// measured is lines per unit of time.
func TestIdleRunLogsNothingPerCommit(t *testing.T) {
	for _, g := range []string{"exactly_once", "at_least_once"} {
		t.Run(g, func(t *testing.T) { idleRunLogs(t, g) })
	}
}

func idleRunLogs(t *testing.T, guarantee string) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var stderr syncBuffer
	var stdout bytes.Buffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	done := make(chan int, 1)
	go func() {
		done <- realMain([]string{"run", "--config", example, "--brokers", strings.Join(c.ListenAddrs(), ","),
			"--listen", addr, "--instance-id", "quiet-1", "--guarantee", guarantee}, &stdout, &stderr)
	}()
	// Settled: ready (joined, a commit made), the committed offsets
	// fetched and the client's metrics subscription received (kfake
	// offers one), so the one-time lines of start-up are behind even on
	// a slow machine.
	settled := func() bool {
		log := stderr.String()
		return ready(addr) && strings.Contains(log, "newly fetched offsets") && strings.Contains(log, "received client metrics subscription")
	}
	for deadline := time.Now().Add(time.Minute); !settled(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("router not settled within a minute (ready %v):\n%s", ready(addr), stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("router ended with %d before joining:\n%s", code, stderr.String())
		default:
		}
	}
	if !strings.Contains(stderr.String(), "level=INFO") {
		t.Fatalf("joining the group logged nothing at INFO:\n%s", stderr.String())
	}
	mark := len(stderr.String())
	time.Sleep(4 * time.Second) // 40 commit intervals
	idle := stderr.String()[mark:]
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("router run exit %d:\n%s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("router run did not stop within a minute of SIGTERM")
	}
	var info []string
	for _, l := range strings.Split(idle, "\n") {
		if strings.Contains(l, "level=INFO") {
			info = append(info, l)
		}
	}
	if len(info) > 0 {
		t.Fatalf("an idle router wrote %d INFO lines in 4s, want 0; first ones:\n%s", len(info), strings.Join(info[:min(len(info), 10)], "\n"))
	}
}

// ready reports whether the router's /readyz answers 200.
func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
