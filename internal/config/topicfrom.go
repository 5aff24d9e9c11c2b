package config

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"
)

// TopicFrom computes a plain route's topic from each record, in place of
// a fixed topic: `expr` is an expression over the record that yields the
// topic's name, `allow` (globs) or `allow_regex` (a regular expression
// the whole name must match) the names it may yield, and `missing` what
// a name that does not exist on the brokers does. A computed name that
// is not a valid topic name, not allowed or missing under require sends
// its record to the dirty route with a reason of its own: never lost.
type TopicFrom struct {
	// Expr yields the topic name, a string.
	Expr string `yaml:"expr"`
	// Allow lists globs (path.Match: *, ?, [a-z]); a name matching any
	// is allowed.
	Allow []string `yaml:"allow"`
	// AllowRegex is a regular expression (RE2) the whole name must
	// match, beside Allow.
	AllowRegex string `yaml:"allow_regex"`
	// Missing is create (the router creates a missing topic with the
	// route's topic settings) or require (a record whose topic does not
	// exist goes to dirty, reason topic_missing).
	Missing string `yaml:"missing"`
}

// What a computed topic that does not exist does (topic_from.missing).
const (
	MissingCreate  = "create"
	MissingRequire = "require"
)

// MaxTopicNameLength is the longest topic name Kafka accepts.
const MaxTopicNameLength = 249

// TopicNameProblem says why name is not a valid Kafka topic name, ""
// when it is one: Kafka's own rule (org.apache.kafka.common.internals.Topic
// .validate): not empty, not "." or "..", at most 249 characters, each
// an ASCII letter, a digit, '.', '_' or '-'.
func TopicNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a valid topic name", name)
	case len(name) > MaxTopicNameLength:
		return fmt.Sprintf("the name is %d characters long, over Kafka's %d", len(name), MaxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !topicChar(name[i]) {
			return fmt.Sprintf("character %q at %d is not allowed (letters, digits, '.', '_', '-')", rune(name[i]), i)
		}
	}
	return ""
}

func topicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// TopicAllow is a compiled allow-list of computed topics.
type TopicAllow struct {
	globs []string
	re    *regexp.Regexp
	src   string
}

// NewTopicAllow compiles globs and a regular expression (either may be
// empty, not both) into an allow-list.
func NewTopicAllow(globs []string, re string) (*TopicAllow, error) {
	if len(globs) == 0 && re == "" {
		return nil, fmt.Errorf("the allow-list is empty: give allow (globs) or allow_regex")
	}
	a := &TopicAllow{globs: globs}
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("glob %q: %v", g, err)
		}
	}
	if re != "" {
		if _, err := regexp.Compile(re); err != nil {
			return nil, fmt.Errorf("allow_regex %q: %v", re, err)
		}
		a.re = regexp.MustCompile("^(?:" + re + ")$") // the whole name
	}
	parts := append([]string{}, globs...)
	if re != "" {
		parts = append(parts, "/"+re+"/")
	}
	a.src = strings.Join(parts, " | ")
	return a, nil
}

// Allows reports whether topic is on the list.
func (a *TopicAllow) Allows(topic string) bool {
	for _, g := range a.globs {
		if ok, _ := path.Match(g, topic); ok {
			return true
		}
	}
	return a.re != nil && a.re.MatchString(topic)
}

// String is the list as written: globs, then /regex/, joined by " | ".
func (a *TopicAllow) String() string { return a.src }

// validateTopicFrom checks a route's topic_from (p is routes[i]).
func (d *doc) validateTopicFrom(p string, r Route) {
	tp := p + ".topic_from"
	tf := r.TopicFrom
	switch {
	case r.Topic != "":
		d.at(p+".topic", "%s: topic and topic_from exclude each other; give one", p)
	case r.Window != nil || r.Assemble != nil:
		d.at(tp, "%s: a window or assembly route writes its results to one topic; topic_from is for plain routes", tp)
	case r.Tombstones == TombstonesForward:
		d.at(tp, "%s: a tombstone has no fields to compute a topic from; remove tombstones: forward", tp)
	case r.Format == OutputAvro:
		d.at(tp, "%s: an avro route registers its schema under its topic's subject at start; computed topics have no subject known then (use json or connect-json)", tp)
	}
	if tf.Expr == "" {
		d.at(tp, "%s.expr is required: an expression that yields the topic's name", tp)
	} else {
		d.checkTopicExpr(tp+".expr", tf.Expr)
	}
	allow, err := NewTopicAllow(tf.Allow, tf.AllowRegex)
	if err != nil {
		at := tp
		if len(tf.Allow) > 0 {
			at += ".allow"
		} else if tf.AllowRegex != "" {
			at += ".allow_regex"
		}
		d.at(at, "%s: %v (every computed topic must be allowed by name)", tp, err)
	}
	switch tf.Missing {
	case MissingCreate, MissingRequire:
	default:
		d.at(tp+".missing", "%s.missing must be %q or %q, got %q", tp, MissingCreate, MissingRequire, tf.Missing)
	}
	if allow == nil {
		return
	}
	c := &d.cfg
	for i, in := range c.Inputs {
		if allow.Allows(in.Topic) {
			d.at(tp, "%s: the allow-list admits input topic %q (inputs[%d]): records would loop back into the router", tp, in.Topic, i)
		}
	}
	if c.Dirty.Topic != "" && allow.Allows(c.Dirty.Topic) {
		d.at(tp, "%s: the allow-list admits the dirty topic %q; narrow it", tp, c.Dirty.Topic)
	}
}

// checkTopicExpr checks a topic expression: it compiles, and its type is
// a string (or unknown until run time: a field's).
func (d *doc) checkTopicExpr(path, src string) {
	e, err := compileExpr(src, false, d.fields, d.fns)
	if err != nil {
		d.checkExpr(path, src, false) // reports it at its place
		return
	}
	if t := e.Program.Node().Type(); t != nil && t.Kind() != reflect.String && t.Kind() != reflect.Interface {
		d.at(path, "%s: a topic expression must yield a string, but this one yields %s", path, typeName(t.String()))
	}
}
