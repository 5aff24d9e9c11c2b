package main

import (
	"errors"
	"fmt"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/serve"
	"github.com/sidestream/sidestream/internal/sideroute"
)

type tailCmd struct {
	topologyArg
	Route         string `placeholder:"ROUTE" help:"Route to read: a route name, dirty, or WINDOW.late (late when there is one)."`
	Format        string `default:"table" enum:"table,json" help:"table (for people) or json (one object per line)."`
	Brokers       string `placeholder:"BROKERS" help:"Comma-separated brokers, overriding the file and SIDESTREAM_BROKERS."`
	Follow        bool   `help:"Keep printing new records until interrupted."`
	FromBeginning bool   `help:"Every record of the topic, not only the last --lines."`
	Lines         int    `default:"10" placeholder:"N" help:"Without --from-beginning: the last N records of the topic in total, across its partitions, oldest first (0 with --follow: only new records)."`
	MaxValue      int    `default:"2048" placeholder:"BYTES" help:"Bytes of each value shown; longer values are cut (0: no limit)."`
}

func (f *tailCmd) Run(e runEnv) error {
	if f.Lines < 0 || f.Lines == 0 && !f.Follow {
		return exitError{code: 2, msg: "router tail: --lines must be at least 1 (0 with --follow: only new records)"}
	}
	if f.MaxValue < 0 {
		return exitError{code: 2, msg: "router tail: --max-value must not be negative"}
	}
	top, err := topologyFor("tail", f.topologyArg, serve.Overrides(f.Brokers, "", "", ""), false)
	if err != nil {
		return err
	}
	target, err := sideroute.Resolve(top, f.Route)
	if err != nil {
		return exitError{code: 2, msg: "router tail: --route: " + err.Error()}
	}
	copts, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return err
	}
	p := sideroute.Printer{W: e.stdout, Plan: top, Format: f.Format, MaxValue: f.MaxValue}
	err = sideroute.Read(e.ctx, sideroute.ReadOptions{
		Brokers: top.Settings.Brokers, ClientOpts: copts, Topic: target.Topic,
		FromBeginning: f.FromBeginning, Last: f.Lines, Follow: f.Follow,
	}, p.Print)
	if errors.Is(err, sideroute.ErrNoTopic) {
		return exitError{code: 1, msg: fmt.Sprintf("router tail: route %s: topic %s does not exist yet (the router creates it when it starts)", target.Name, target.Topic)}
	}
	return err
}
