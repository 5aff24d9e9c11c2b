package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	appIDRe     = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)
	routeNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	topicRe     = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)
)

// reserved route names: the dirty route has its own section and "drop" is
// the routing.default keyword.
var reservedRoutes = map[string]bool{"dirty": true, DropDefault: true}

func (d *doc) validate() {
	c := &d.cfg
	if c.ApplicationID == "" {
		d.at("application_id", "application_id is required (it names the consumer group and prefixes internal topics)")
	} else if !appIDRe.MatchString(c.ApplicationID) {
		d.at("application_id", "application_id %q may hold only letters, digits, '.', '_' and '-'", c.ApplicationID)
	}
	for i, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			d.at(fmt.Sprintf("brokers[%d]", i), "broker %q needs a port (host:port)", b)
		}
	}
	if c.Guarantee != ExactlyOnce && c.Guarantee != AtLeastOnce {
		d.at("guarantee", "guarantee must be %q or %q, got %q", ExactlyOnce, AtLeastOnce, c.Guarantee)
	}
	if c.CommitRecords < 0 {
		d.at("commit_records", "commit_records must be positive, got %d", c.CommitRecords)
	}
	if c.Topics.Partitions < 1 {
		d.at("topics.partitions", "topics.partitions must be at least 1, got %d", c.Topics.Partitions)
	}
	if c.Topics.ReplicationFactor < -1 || c.Topics.ReplicationFactor == 0 {
		d.at("topics.replication_factor", "topics.replication_factor must be at least 1 (or -1 for the broker default), got %d", c.Topics.ReplicationFactor)
	}

	topics := map[string]string{} // topic -> path of its first use
	useTopic := func(path, topic string) {
		if topic == "" {
			return
		}
		if !topicRe.MatchString(topic) || topic == "." || topic == ".." {
			d.at(path, "invalid topic name %q (letters, digits, '.', '_', '-'; at most 249)", topic)
			return
		}
		if first, ok := topics[topic]; ok {
			d.at(path, "topic %q is already used by %s", topic, first)
			return
		}
		topics[topic] = path
	}

	if len(c.Inputs) == 0 {
		d.at("inputs", "at least one input topic is required")
	}
	for i, in := range c.Inputs {
		p := fmt.Sprintf("inputs[%d]", i)
		if in.Topic == "" {
			d.at(p, "%s: topic is required", p)
		}
		useTopic(p+".topic", in.Topic)
		if in.Format != "json" {
			d.at(p+".format", "input format %q is not supported (supported: json)", in.Format)
		}
		if in.Schema != "" {
			if _, err := loadSchema(d.dir, in.Schema); err != nil {
				d.at(p+".schema", "%v", err)
			}
		}
	}

	switch c.EventTime.Format {
	case TimeKafka:
		if c.EventTime.Field != "" {
			d.at("event_time.field", "event_time.field is not read when event_time.format is %q; remove it or pick another format", TimeKafka)
		}
	case TimeEpochMillis, TimeEpochSecs, TimeRFC3339:
		if c.EventTime.Field == "" {
			d.at("event_time", "event_time.field is required with format %q", c.EventTime.Format)
		}
	default:
		d.at("event_time.format", "event_time.format must be one of epoch_ms, epoch_s, rfc3339, kafka; got %q", c.EventTime.Format)
	}

	if c.Routing.Match != MatchFirst && c.Routing.Match != MatchAll {
		d.at("routing.match", "routing.match must be %q or %q, got %q", MatchFirst, MatchAll, c.Routing.Match)
	}

	if len(c.Routes) == 0 {
		d.at("routes", "at least one route is required")
	}
	names := map[string]bool{}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		switch {
		case r.Name == "":
			d.at(p, "%s: name is required", p)
		case reservedRoutes[r.Name]:
			d.at(p+".name", "route name %q is reserved", r.Name)
		case !routeNameRe.MatchString(r.Name):
			d.at(p+".name", "route name %q must start with a lower-case letter and hold only a-z, 0-9, '_' and '-'", r.Name)
		case names[r.Name]:
			d.at(p+".name", "duplicate route name %q", r.Name)
		}
		names[r.Name] = true
		if r.Topic == "" {
			d.at(p, "%s: topic is required", p)
		}
		useTopic(p+".topic", r.Topic)
		if r.When != "" {
			d.checkExpr(p+".when", r.When, true)
		}
		if r.Key != "" {
			d.checkExpr(p+".key", r.Key, false)
		}
		switch r.Value {
		case ValueOriginal:
			if len(r.Project) > 0 {
				d.at(p+".project", "project is set but value is %q; set value: projection", ValueOriginal)
			}
		case ValueProjection:
			if len(r.Project) == 0 {
				d.at(p+".value", "value: projection needs a project mapping of output field to expression")
			}
			for _, f := range r.Project {
				d.checkExpr(p+".project."+f.Name, f.Expr, false)
			}
		default:
			d.at(p+".value", "value must be %q or %q, got %q", ValueOriginal, ValueProjection, r.Value)
		}
	}

	switch def := c.Routing.Default; {
	case def == "":
		d.at("routing", "routing.default is required: name the route for unmatched records, or %q to drop them (counted)", DropDefault)
	case def != DropDefault && !names[def]:
		d.at("routing.default", "routing.default names route %q, which is not defined", def)
	}

	if c.Dirty.Topic == "" {
		d.at("dirty", "the dirty route is required: set dirty.topic (records that fail decode, schema, event time or expressions go there)")
	}
	useTopic("dirty.topic", c.Dirty.Topic)
	if c.Dirty.MaxRecordBytes < 1024 {
		d.at("dirty.max_record_bytes", "dirty.max_record_bytes must be at least 1024, got %d", c.Dirty.MaxRecordBytes)
	}
	if c.Dirty.TruncateTo < 0 || c.Dirty.TruncateTo > c.Dirty.MaxRecordBytes-1024 {
		d.at("dirty.truncate_to", "dirty.truncate_to must be between 0 and max_record_bytes - 1024 (room for headers), got %d", c.Dirty.TruncateTo)
	}
}

func (d *doc) checkExpr(path, src string, asBool bool) {
	if _, err := CompileExpr(src, asBool); err != nil {
		d.at(path, "%s: %v", path, err)
	}
}

// loadSchema compiles a JSON Schema file given relative to the config dir.
func loadSchema(dir, path string) (*jsonschema.Schema, error) {
	full := path
	if !filepath.IsAbs(path) {
		full = filepath.Join(dir, path)
	}
	if _, err := os.Stat(full); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("schema file %q not found", full)
		}
		return nil, fmt.Errorf("schema file %q: %v", full, err)
	}
	abs, err := filepath.Abs(full)
	if err != nil {
		return nil, fmt.Errorf("schema file %q: %v", full, err)
	}
	c := jsonschema.NewCompiler()
	s, err := c.Compile(abs)
	if err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("schema %q does not compile: %s", path, msg)
	}
	return s, nil
}
