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

// envGroupProtocol "consumer" builds the router with the build tag
// sidestream_kip848 (cmd/router/kip848.go): its group joins with KIP-848's
// consumer protocol, the broker assigning (Kafka 4.x; scripts/compat.sh).
// Unset or "classic": the classic protocol, the router's only one.
const envGroupProtocol = "SIDESTREAM_IT_GROUP_PROTOCOL"

// consumerProtocol: the routers of this run use KIP-848's protocol.
func consumerProtocol() bool { return os.Getenv(envGroupProtocol) == "consumer" }

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
		args := []string{"build", "-o", routerBin}
		switch p := os.Getenv(envGroupProtocol); p {
		case "", "classic":
		case "consumer":
			args = append(args, "-tags", "sidestream_kip848")
		default:
			fmt.Fprintf(os.Stderr, "itest: %s=%q: use classic or consumer\n", envGroupProtocol, p)
			return 1
		}
		build := exec.Command("go", append(args, "github.com/sidestream/sidestream/cmd/router")...)
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
