// Command goka-peer is the Goka peer of the sidestream benchmark
// (bench/README.md): W1 at-least-once (Goka has no transactions). Each
// JSON log event is parsed once; a record that is not a JSON object goes
// to PREFIX.dirty with its original bytes, the rest by level to
// PREFIX.error (keyed by service), PREFIX.warn or PREFIX.main, values
// passed through unchanged. Offsets are committed every 100 ms.
//
//	goka-peer BROKERS INPUT PREFIX GROUP
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
)

// event holds the fields routing reads.
type event struct {
	Level   string `json:"level"`
	Service string `json:"service"`
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: goka-peer BROKERS INPUT PREFIX GROUP")
		os.Exit(2)
	}
	brokers, input, prefix, group := strings.Split(os.Args[1], ","), os.Args[2], os.Args[3], os.Args[4]
	if err := run(brokers, input, prefix, group); err != nil {
		fmt.Fprintln(os.Stderr, "goka-peer:", err)
		os.Exit(1)
	}
}

func run(brokers []string, input, prefix, group string) error {
	cfg := goka.DefaultConfig()
	cfg.Version = sarama.V3_5_0_0 // Kafka 4 refuses the protocol versions of Goka's default
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	goka.ReplaceGlobalConfig(cfg)

	dirty, errs, warn, main := goka.Stream(prefix+".dirty"), goka.Stream(prefix+".error"), goka.Stream(prefix+".warn"), goka.Stream(prefix+".main")
	route := func(ctx goka.Context, msg any) {
		v, _ := msg.([]byte)
		var ev event
		if !utf8.Valid(v) || len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &ev) != nil {
			ctx.Emit(dirty, ctx.Key(), v)
			return
		}
		switch ev.Level {
		case "ERROR":
			ctx.Emit(errs, ev.Service, v)
		case "WARN":
			ctx.Emit(warn, ctx.Key(), v)
		default:
			ctx.Emit(main, ctx.Key(), v)
		}
	}
	g := goka.DefineGroup(goka.Group(group),
		goka.Input(goka.Stream(input), new(codec.Bytes), route),
		goka.Output(dirty, new(codec.Bytes)),
		goka.Output(errs, new(codec.Bytes)),
		goka.Output(warn, new(codec.Bytes)),
		goka.Output(main, new(codec.Bytes)),
	)
	p, err := goka.NewProcessor(brokers, g)
	if err != nil {
		return fmt.Errorf("new processor: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println(`{"started":true}`)
	return p.Run(ctx)
}
