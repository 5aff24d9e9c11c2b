package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the MySQL sink's table

	"github.com/sidestream/sidestream/internal/audit"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/sideroute"
)

// cmdAudit is `router audit`: its flags, then internal/audit. Exit 1 on
// any drift, 2 on a usage or run error.
func cmdAudit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG): brokers, security and --route's topic")
	route := fs.String("route", "", "the route whose topic is audited (with --config)")
	topic := fs.String("topic", "", "the topic to audit, instead of --config and --route")
	brokers := fs.String("brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
	esURL := fs.String("es-url", "", "Elasticsearch base URL (http://host:9200)")
	esIndex := fs.String("es-index", "", "the index (default: the topic, lower-cased)")
	dsn := fs.String("mysql-dsn", os.Getenv("SIDESTREAM_AUDIT_MYSQL_DSN"), "MySQL DSN, user:password@tcp(host:3306)/db (env SIDESTREAM_AUDIT_MYSQL_DSN)")
	table := fs.String("mysql-table", "", "the table (default: the topic, lower-cased)")
	keyCol := fs.String("mysql-key", "id", "the table's key column")
	format := fs.String("format", "text", "text or json")
	samples := fs.Int("samples", 20, "keys listed per kind of drift (the counts are complete)")
	dir := fs.String("dir", "", "directory for the topic's on-disk key store (default: a temporary one)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	usage := func(msg string) error { return exitError{code: 2, msg: "router audit: " + msg} }
	if fs.NArg() > 0 || (*format != "text" && *format != "json") || (*esURL == "" && *dsn == "") {
		return usage("flags only; --format text|json; at least one of --es-url and --mysql-dsn")
	}
	opts := audit.Options{Topic: *topic, Samples: *samples, Dir: *dir}
	if *config != "" {
		top, err := loadTopology(*config, brokerOverrides(*brokers), false)
		if err != nil {
			return err
		}
		target, err := sideroute.Resolve(top, *route)
		if err != nil {
			return usage("--route: " + err.Error())
		}
		if opts.ClientOpts, err = kclient.SecurityOpts(top.Settings.Security); err != nil {
			return err
		}
		opts.Topic, opts.Brokers = target.Topic, top.Settings.Brokers
	} else {
		opts.Brokers = brokerOverrides(*brokers).Brokers
	}
	if opts.Topic == "" || len(opts.Brokers) == 0 {
		return usage("name the topic (--topic, or --config with --route) and the brokers")
	}
	if *esURL != "" {
		opts.Elasticsearch = &audit.ESTarget{URL: *esURL, Index: orLower(*esIndex, opts.Topic)}
	}
	if *dsn != "" {
		db, err := sql.Open("mysql", *dsn)
		if err != nil {
			return usage("--mysql-dsn: " + err.Error())
		}
		defer db.Close()
		opts.MySQL = &audit.MySQLTarget{DB: db, Table: orLower(*table, opts.Topic), KeyColumn: *keyCol}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep, err := audit.Run(ctx, opts)
	if err != nil {
		return exitError{code: 2, msg: fmt.Sprintf("router audit: %v", err)}
	}
	write := rep.WriteText
	if *format == "json" {
		write = rep.WriteJSON
	}
	if err := write(stdout); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	if rep.Drifted() {
		return exitError{code: 1}
	}
	return nil
}

func orLower(v, topic string) string {
	if v != "" {
		return v
	}
	return strings.ToLower(topic)
}
