package kclient

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaLoggerLevels: per-commit lines go to DEBUG; rebalances, resets,
// warnings and errors keep their level.
func TestKafkaLoggerLevels(t *testing.T) {
	for _, tc := range []struct {
		level kgo.LogLevel
		msg   string
		want  string // "" = not written at INFO
	}{
		{kgo.LogLevelInfo, "flushing", ""},
		{kgo.LogLevelInfo, "beginning transaction", ""},
		{kgo.LogLevelInfo, "transaction session ending", ""},
		{kgo.LogLevelInfo, "transact session successful, setting to newly committed state", ""},
		{kgo.LogLevelInfo, "joining group", "level=INFO"},
		{kgo.LogLevelInfo, "calling onRevoke at the end of a session", "level=INFO"},
		{kgo.LogLevelInfo, "transact session resetting to current committed state (potentially after a rejoin)", "level=INFO"},
		{kgo.LogLevelWarn, "flushing", "level=WARN"},
		{kgo.LogLevelError, "producer id initialization errored", "level=ERROR"},
	} {
		var b bytes.Buffer
		l := NewLogger(slog.New(slog.NewTextHandler(&b, nil)))
		if l.Level() != kgo.LogLevelInfo {
			t.Fatalf("level %v, want info", l.Level())
		}
		l.Log(tc.level, tc.msg)
		got := b.String()
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%v %q: wrote %q, want %q", tc.level, tc.msg, got, tc.want)
		}
		b.Reset()
		d := NewLogger(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
		if d.Log(tc.level, tc.msg); !strings.Contains(b.String(), "component=kafka") {
			t.Errorf("%v %q at debug: wrote %q", tc.level, tc.msg, b.String())
		}
	}
}
