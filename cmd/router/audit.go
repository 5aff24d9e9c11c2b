package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sidestream/sidestream/internal/audit"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/serve"
	"github.com/sidestream/sidestream/internal/sideroute"
)

// auditCmd is `router audit`: its flags, then internal/audit. Exit 1 on
// any drift, 2 on a usage or run error.
type auditCmd struct {
	File       string        `arg:"" optional:"" name:"file" help:"Topology file (or --config): brokers, security and --route's topic; not needed with --topic." predictor:"yaml"`
	Config     string        `name:"config" placeholder:"FILE" env:"SIDESTREAM_CONFIG" help:"Topology file, when no FILE is given." predictor:"yaml"`
	Route      string        `placeholder:"ROUTE" help:"The route whose topic is audited (with a topology)."`
	Topic      string        `placeholder:"TOPIC" help:"The topic to audit, instead of a topology and --route (with --brokers)."`
	Brokers    string        `placeholder:"BROKERS" help:"Comma-separated brokers, overriding the file and SIDESTREAM_BROKERS."`
	EsURL      string        `name:"es-url" placeholder:"URL" help:"Elasticsearch base URL (http://host:9200)."`
	EsIndex    string        `name:"es-index" placeholder:"INDEX" help:"The index (default: the topic, lower-cased)."`
	MysqlDSN   string        `name:"mysql-dsn" placeholder:"DSN" env:"SIDESTREAM_AUDIT_MYSQL_DSN" help:"MySQL DSN, user:password@tcp(host:3306)/db."`
	MysqlTable string        `name:"mysql-table" placeholder:"TABLE" help:"The table (default: the topic, lower-cased)."`
	MysqlKey   string        `name:"mysql-key" default:"id" help:"The table's key column."`
	Format     string        `default:"text" enum:"text,json" help:"text or json."`
	Samples    int           `default:"20" placeholder:"N" help:"Keys listed per kind of drift (the counts are complete)."`
	Dir        string        `placeholder:"DIR" help:"Directory of the topic's on-disk key store (default: a temporary one)."`
	Timeout    time.Duration `default:"30m" help:"Give up after this long."`
}

func (c *auditCmd) Run(e runEnv) error {
	usage := func(msg string) error { return exitError{code: 2, msg: "router audit: " + msg} }
	if c.EsURL == "" && c.MysqlDSN == "" {
		return usage("name at least one sink: --es-url or --mysql-dsn")
	}
	opts := audit.Options{Topic: c.Topic, Samples: c.Samples, Dir: c.Dir}
	if c.Topic == "" {
		top, err := topologyFor("audit", topologyArg{File: c.File, Config: c.Config}, serve.Overrides(c.Brokers, "", "", ""), false)
		if err != nil {
			return err
		}
		target, err := sideroute.Resolve(top, c.Route)
		if err != nil {
			return usage("--route: " + err.Error())
		}
		if opts.ClientOpts, err = kclient.SecurityOpts(top.Settings.Security); err != nil {
			return err
		}
		opts.Topic, opts.Brokers = target.Topic, top.Settings.Brokers
	} else {
		opts.Brokers = serve.Overrides(c.Brokers, "", "", "").Brokers
	}
	if len(opts.Brokers) == 0 {
		return usage("no brokers: give --brokers or SIDESTREAM_BROKERS")
	}
	closeSinks, err := audit.Sinks{ESURL: c.EsURL, ESIndex: c.EsIndex, MySQLDSN: c.MysqlDSN, MySQLTable: c.MysqlTable, MySQLKey: c.MysqlKey}.Open(&opts)
	if err != nil {
		return usage(err.Error())
	}
	defer closeSinks()
	ctx, cancel := context.WithTimeout(e.ctx, c.Timeout)
	defer cancel()
	rep, err := audit.Run(ctx, opts)
	if err != nil {
		return exitError{code: 2, msg: fmt.Sprintf("router audit: %v", err)}
	}
	write := rep.WriteText
	if c.Format == "json" {
		write = rep.WriteJSON
	}
	if err := write(e.stdout); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	if rep.Drifted() {
		return exitError{code: 1}
	}
	return nil
}
