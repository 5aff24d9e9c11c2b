package kclient

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// routineKafka are franz-go's INFO messages of every healthy commit: a
// router committing every 100ms would write them ten times a second.
// They are logged at DEBUG. Everything else keeps franz-go's level, so
// joins, revokes, lost partitions, offset resets ("transact session
// resetting to current committed state"), producer id changes and every
// warning and error stay visible at INFO.
var routineKafka = map[string]bool{
	"beginning transact session":                     true,
	"beginning transaction":                          true,
	"flushing":                                       true,
	"transaction session ending":                     true,
	"ending transaction":                             true,
	"end transaction response successfully received": true,
	"transact session successful, setting to newly committed state": true,
	"issuing AddOffsetsToTxn": true,
}

// kafkaLogger is the kgo.Logger of the router's clients: kslog on the
// router's logger, with routine per-commit lines demoted to DEBUG.
type kafkaLogger struct{ *kslog.Logger }

var _ kgo.Logger = kafkaLogger{}

// NewLogger is the kgo.Logger of the router's clients (kgo.WithLogger):
// l with component=kafka, routine per-commit lines at DEBUG.
func NewLogger(l *slog.Logger) kgo.Logger {
	return kafkaLogger{kslog.New(l.With("component", "kafka"))}
}

// Log is for the kgo.Logger interface.
func (k kafkaLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level == kgo.LogLevelInfo && routineKafka[msg] {
		level = kgo.LogLevelDebug
	}
	k.Logger.Log(level, msg, keyvals...)
}
