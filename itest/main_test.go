package itest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// envBrokers names the real broker; without it every test skips.
const envBrokers = "SIDESTREAM_IT_BROKERS"

// routerBin is the router binary, built once by TestMain.
var routerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Getenv(envBrokers) != "" {
		dir, err := os.MkdirTemp("", "sidestream-itest-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "itest:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		routerBin = filepath.Join(dir, "router")
		build := exec.Command("go", "build", "-o", routerBin, "github.com/sidestream/sidestream/cmd/router")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "itest: build the router:", err)
			return 1
		}
	}
	code := m.Run()
	if code != 0 {
		return code
	}
	// Every client, process and HTTP connection a test opens is closed
	// in its cleanups; a leftover goroutine is a harness bug.
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "itest: leaked goroutines:", strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}
