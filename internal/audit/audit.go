package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Options say what to compare. At least one sink is named.
type Options struct {
	Brokers    []string
	ClientOpts []kgo.Opt // TLS and SASL options (kclient.SecurityOpts)
	Topic      string

	Elasticsearch *ESTarget
	MySQL         *MySQLTarget

	// Dir holds the on-disk store of the topic's keys while the audit
	// runs; a temporary directory is made (and removed) when empty.
	Dir string
	// Samples is how many keys of each kind of drift a report lists
	// (the counts are always complete); 20 when 0.
	Samples int
	// HTTP talks to Elasticsearch; a client with a 60 s timeout when nil.
	HTTP *http.Client
}

// Report is an audit's finding.
type Report struct {
	Topic string `json:"topic"`
	// Records is how many committed records the topic held, Keys how many
	// keys' latest record is a value, Tombstones how many a tombstone.
	Records    int64 `json:"records"`
	Keys       int64 `json:"keys"`
	Tombstones int64 `json:"tombstones"`
	// SplitKeys counts keys written to more than one partition: their
	// latest value is not well defined, and a sink may apply them out of
	// order.
	SplitKeys int64        `json:"split_keys"`
	Sinks     []SinkReport `json:"sinks"`
	Elapsed   string       `json:"elapsed"`
}

// SinkReport is one sink's comparison with the topic.
type SinkReport struct {
	Sink   string `json:"sink"`   // elasticsearch or mysql
	Target string `json:"target"` // the index or the table
	Read   int64  `json:"read"`   // documents or rows read
	Same   int64  `json:"same"`
	// Missing: keys the topic holds and the sink does not; Extra: keys the
	// sink holds and the topic does not (or deleted with a tombstone);
	// Different: keys whose values differ.
	Missing   Drift `json:"missing"`
	Extra     Drift `json:"extra"`
	Different Drift `json:"different"`
	// Versions counts Elasticsearch documents by _version (the number of
	// writes each took), for a reader checking for repeated writes.
	Versions map[int64]int64 `json:"versions,omitempty"`
}

// Drift is one kind of difference: its full count and the first keys.
type Drift struct {
	Count int64    `json:"count"`
	Keys  []string `json:"keys,omitempty"`
	// Fields names, for each listed key of Different, the fields that differ.
	Fields map[string][]string `json:"fields,omitempty"`
}

// Drifted says whether any sink differs from the topic.
func (r Report) Drifted() bool {
	for _, s := range r.Sinks {
		if s.Missing.Count+s.Extra.Count+s.Different.Count > 0 {
			return true
		}
	}
	return false
}

// source is one side of a comparison, in strictly increasing key order.
type source interface {
	next(ctx context.Context) (key string, d Doc, ok bool, err error)
	close() error
}

// Run reads the topic and compares every named sink with it.
func Run(ctx context.Context, o Options) (Report, error) {
	start := time.Now()
	rep := Report{Topic: o.Topic}
	if o.Topic == "" {
		return rep, errors.New("no topic to audit")
	}
	if o.Elasticsearch == nil && o.MySQL == nil {
		return rep, errors.New("no sink to audit: name an Elasticsearch index or a MySQL table")
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "sidestream-audit-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	store, err := openTopicStore(dir)
	if err != nil {
		return rep, err
	}
	defer store.close()
	// Small fetches: the topic is read faster than Pebble takes it, and a
	// buffered fetch of small records is many times its size in
	// kgo.Records (kgo's default, 50 MB, held 40 MB of live heap).
	copts := append([]kgo.Opt{kgo.FetchMaxBytes(1 << 20), kgo.FetchMaxPartitionBytes(256 << 10)}, o.ClientOpts...)
	st, err := store.load(ctx, o.Brokers, copts, o.Topic)
	if err != nil {
		return rep, err
	}
	rep.Records, rep.Keys, rep.Tombstones, rep.SplitKeys = st.records, st.keys, st.tombstones, st.split
	if o.Elasticsearch != nil {
		sr, err := auditES(ctx, o, store)
		if err != nil {
			return rep, err
		}
		rep.Sinks = append(rep.Sinks, sr)
	}
	if o.MySQL != nil {
		sr := SinkReport{Sink: "mysql", Target: o.MySQL.Table}
		sink, err := newMySQLScan(ctx, *o.MySQL)
		if err != nil {
			return rep, err
		}
		if err := compare(ctx, store, sink, &sr, o.samples()); err != nil {
			return rep, err
		}
		rep.Sinks = append(rep.Sinks, sr)
	}
	rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

func auditES(ctx context.Context, o Options, store *topicStore) (SinkReport, error) {
	sr := SinkReport{Sink: "elasticsearch", Target: o.Elasticsearch.Index}
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	sink, err := newESScan(ctx, hc, *o.Elasticsearch)
	if err != nil {
		return sr, err
	}
	if err := compare(ctx, store, sink, &sr, o.samples()); err != nil {
		return sr, err
	}
	sr.Versions = sink.versions
	return sr, nil
}

func (o Options) samples() int {
	if o.Samples <= 0 {
		return 20
	}
	return o.Samples
}

// compare merges the topic's keys with the sink's, both in byte order.
func compare(ctx context.Context, store *topicStore, sink source, sr *SinkReport, samples int) error {
	defer sink.close()
	top, err := store.iter()
	if err != nil {
		return err
	}
	defer top.close()
	a := &ordered{src: top, name: "topic"}
	b := &ordered{src: sink, name: sr.Sink + " " + sr.Target}
	if err := a.advance(ctx); err != nil {
		return err
	}
	if err := b.advance(ctx); err != nil {
		return err
	}
	for a.ok || b.ok {
		switch {
		case b.ok && (!a.ok || b.key < a.key):
			sr.Read++
			sr.Extra.add(b.key, nil, samples)
			err = b.advance(ctx)
		case a.ok && (!b.ok || a.key < b.key):
			sr.Missing.add(a.key, nil, samples)
			err = a.advance(ctx)
		default:
			sr.Read++
			if f := diffFields(a.doc, b.doc); len(f) > 0 {
				sr.Different.add(a.key, f, samples)
			} else {
				sr.Same++
			}
			if err = a.advance(ctx); err == nil {
				err = b.advance(ctx)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *Drift) add(key string, fields []string, samples int) {
	d.Count++
	if len(d.Keys) >= samples {
		return
	}
	d.Keys = append(d.Keys, key)
	if fields != nil {
		if d.Fields == nil {
			d.Fields = map[string][]string{}
		}
		d.Fields[key] = fields
	}
}

// ordered is a source's current key, checked to increase: a sink that
// does not return its keys in byte order would make the merge report
// keys as missing and extra that are neither.
type ordered struct {
	src  source
	name string
	key  string
	doc  Doc
	ok   bool
	seen bool
}

func (o *ordered) advance(ctx context.Context) error {
	prev, had := o.key, o.seen
	k, d, ok, err := o.src.next(ctx)
	if err != nil {
		return err
	}
	o.key, o.doc, o.ok = k, d, ok
	if ok {
		if had && k <= prev {
			return fmt.Errorf("%s does not return its keys in byte order (%q after %q)", o.name, k, prev)
		}
		o.seen = true
	}
	return nil
}
