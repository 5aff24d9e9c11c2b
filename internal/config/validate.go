package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/aggfn"
)

var (
	appIDRe     = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)
	routeNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
)

// reserved route names, and why: a route of that name could not be told
// apart from the dirty route in metrics and headers, or from the keyword in
// routing.default.
var reservedRoutes = map[string]string{
	"dirty":     "the dirty route is set in its own dirty section",
	DropDefault: "routing.default: drop means drop unmatched records",
}

func (d *doc) validate() {
	d.validateBasics()
	d.validateState()
	d.validateClient()
	d.validateTopics()
	useTopic := d.topicUses()
	inSchemas := d.validateInputs(useTopic)
	d.fields = d.withTypes(d.withSchemaFields(newFieldTypes(inSchemas), inSchemas), inSchemas)
	d.validateEventTime()
	d.checkEventTimeField()
	d.validateTables(useTopic)
	d.fns = d.withTables(d.fns)
	d.validateRoutes(inSchemas, useTopic)
	d.validateDirty(useTopic)
	d.validateSecurity()
	d.validateRegistry()
	d.validateAPI()
	d.validateTracing()
}

// validateBasics checks the top-level scalars: the application id, the
// brokers, the guarantee, the commit and topic-creation numbers.
func (d *doc) validateBasics() {
	c := &d.cfg
	if c.ApplicationID == "" {
		d.at("application_id", "application_id is required (it names the consumer group and prefixes internal topics)")
	} else if !appIDRe.MatchString(c.ApplicationID) {
		d.at("application_id", "application_id %q may hold only letters, digits, '.', '_' and '-'", c.ApplicationID)
	}
	for i, b := range c.Brokers {
		if err := checkBroker(b); err != nil {
			d.at(fmt.Sprintf("brokers[%d]", i), "brokers[%d]: %v", i, err)
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
}

// useTopicFunc records that the part named what reads (input) or writes
// topic, declared at path.
type useTopicFunc func(path, what string, input bool, topic string)

// topicUses returns the check that every topic is read or written by one
// part only: two routes on one topic could not be told apart downstream,
// and a route writing to an input would feed its records back into the
// router forever.
func (d *doc) topicUses() useTopicFunc {
	type use struct {
		what  string // "input", "route \"x\"", "the dirty route"
		input bool
		pos   Pos
	}
	topics := map[string]use{}
	return func(path, what string, input bool, topic string) {
		if topic == "" {
			return
		}
		if TopicNameProblem(topic) != "" {
			d.at(path, "invalid topic name %q (letters, digits, '.', '_', '-'; at most 249)", topic)
			return
		}
		first, ok := topics[topic]
		switch {
		case !ok:
			topics[topic] = use{what: what, input: input, pos: d.lookup(path)}
		case input && first.input:
			d.at(path, "input topic %q is listed twice (first at line %d)", topic, first.pos.Line)
		case first.input:
			d.at(path, "%s writes to %q, which is an input topic (line %d): records would loop back into the router", what, topic, first.pos.Line)
		default:
			d.at(path, "%s writes to %q, which %s already writes to (line %d); give each its own topic", what, topic, first.what, first.pos.Line)
		}
	}
}

// validateInputs checks the inputs and loads their JSON Schemas, which the
// connect-json routes and the strict expression checks read.
func (d *doc) validateInputs(useTopic useTopicFunc) []inputSchema {
	c := &d.cfg
	if len(c.Inputs) == 0 {
		d.at("inputs", "at least one input topic is required")
	}
	var inSchemas []inputSchema
	for i, in := range c.Inputs {
		p := fmt.Sprintf("inputs[%d]", i)
		if in.Topic == "" {
			d.at(p, "%s: topic is required", p)
		}
		useTopic(p+".topic", "input", true, in.Topic)
		d.validateInputFormat(p, in)
		is := inputSchema{topic: in.Topic}
		if in.Schema != "" && in.Format == InputJSON {
			s, err := loadSchema(d.dir, in.Schema)
			if err != nil {
				d.at(p+".schema", "%v", err)
			}
			is.schema = s
		}
		inSchemas = append(inSchemas, is)
	}
	return inSchemas
}

func (d *doc) validateEventTime() {
	c := &d.cfg
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
	if c.EventTime.MaxAhead > 0 && c.EventTime.Format == TimeKafka {
		d.at("event_time.max_ahead", "event_time.max_ahead bounds an event time read from a field; with format %q the event time is the record timestamp itself", TimeKafka)
	}
	if c.EventTime.OnAhead != AheadDirty && c.EventTime.OnAhead != AheadClamp {
		d.at("event_time.on_ahead", "event_time.on_ahead must be %q or %q, got %q", AheadDirty, AheadClamp, c.EventTime.OnAhead)
	}
}

// validateRoutes checks routing and every route, then routing.default
// against the route names.
func (d *doc) validateRoutes(inSchemas []inputSchema, useTopic useTopicFunc) {
	c := &d.cfg
	if c.Routing.Match != MatchFirst && c.Routing.Match != MatchAll {
		d.at("routing.match", "routing.match must be %q or %q, got %q", MatchFirst, MatchAll, c.Routing.Match)
	}
	if len(c.Routes) == 0 {
		d.at("routes", "at least one route is required")
	}
	names := map[string]bool{}
	nameLine := map[string]int{} // route name -> line of its first use
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		switch {
		case r.Name == "":
			d.at(p, "%s: name is required", p)
		case reservedRoutes[r.Name] != "":
			d.at(p+".name", "route name %q is reserved (%s); pick another name", r.Name, reservedRoutes[r.Name])
		case !routeNameRe.MatchString(r.Name):
			d.at(p+".name", "route name %q must start with a lower-case letter and hold only a-z, 0-9, '_' and '-'", r.Name)
		case names[r.Name]:
			d.at(p+".name", "duplicate route name %q (first at line %d)", r.Name, nameLine[r.Name])
		}
		if !names[r.Name] {
			nameLine[r.Name] = d.lookup(p + ".name").Line
		}
		names[r.Name] = true
		d.validateRoute(p, r, inSchemas, useTopic)
	}
	switch def := c.Routing.Default; {
	case def == "":
		d.at("routing", "routing.default is required: name the route for unmatched records, or %q to drop them (counted)", DropDefault)
	case def != DropDefault && !names[def]:
		known := fmt.Sprintf("%q to drop", DropDefault)
		if rn := routeNames(c.Routes); len(rn) > 0 {
			known = "routes: " + strings.Join(rn, ", ") + "; or " + known
		}
		d.at("routing.default", "routing.default names route %q, which is not defined (%s)", def, known)
	default:
		d.warnUnreachableDefault()
	}
}

// warnUnreachableDefault warns, with match: all, of a route that matches
// every record (no when, or when: true; a window too): no record is ever
// unmatched, so routing.default never receives one as the default.
func (d *doc) warnUnreachableDefault() {
	c := &d.cfg
	if c.Routing.Match != MatchAll || c.Routing.Default == DropDefault {
		return
	}
	for i, r := range c.Routes {
		if r.Assemble != nil || !alwaysTrue(r.When) {
			continue // an assembly route takes its parts apart from routing
		}
		p := fmt.Sprintf("routes[%d]", i)
		if r.When != "" {
			p += ".when"
		}
		what := "has no when"
		if r.When != "" {
			what = "has when: " + strings.TrimSpace(r.When)
		}
		if r.Name == c.Routing.Default {
			d.warnAt(p, "route %q is routing.default and %s: with routing.match: all it receives every record, not only the unmatched ones; give it a when, or use match: first with it last", r.Name, what)
		} else {
			d.warnAt(p, "routing.default %q is unreachable: with routing.match: all, route %q %s, so it matches every record and none is ever unmatched; give it a when, or set routing.default: %s", c.Routing.Default, r.Name, what, DropDefault)
		}
		return
	}
}

// alwaysTrue reports whether a route's predicate holds for every record:
// none, or the constant true.
func alwaysTrue(when string) bool {
	if strings.TrimSpace(when) == "" {
		return true
	}
	tree, err := parser.Parse(when)
	if err != nil {
		return false
	}
	b, ok := tree.Node.(*ast.BoolNode)
	return ok && b.Value
}

// validateRoute checks one route (p is its path, routes[i]) but its name.
func (d *doc) validateRoute(p string, r Route, inSchemas []inputSchema, useTopic useTopicFunc) {
	c := &d.cfg
	switch {
	case r.TopicFrom != nil:
		d.validateTopicFrom(p, r)
	case r.Topic == "":
		d.at(p, "%s: topic (or topic_from) is required", p)
	}
	useTopic(p+".topic", fmt.Sprintf("route %q", r.Name), false, r.Topic)
	if r.When != "" {
		d.checkExpr(p+".when", r.When, true)
	}
	if r.Key != "" {
		d.checkExpr(p+".key", r.Key, false)
	}
	d.validateFormat(p, r, inSchemas)
	d.validateTombstones(p, r)
	if r.SLO != nil {
		d.validateRouteSLO(p, r)
	}
	switch {
	case r.StateVersion < 0:
		d.at(p+".state_version", "%s.state_version must be at least 0, got %d", p, r.StateVersion)
	case r.StateVersion != 0 && r.Window == nil && r.Assemble == nil:
		d.at(p+".state_version", "%s.state_version: only a window or assembly route has state", p)
	}
	switch {
	case r.Window != nil:
		d.validateWindow(p, r, useTopic)
	case r.Assemble != nil:
		d.validateAssembly(p, r, c.Routes, useTopic)
		if c.Routing.Default == r.Name {
			d.at("routing.default", "routing.default names %q, an assembly route; unmatched records cannot be parts", r.Name)
		}
	default:
		d.validateValue(p, r)
	}
}

func (d *doc) validateTombstones(p string, r Route) {
	switch r.Tombstones {
	case "", TombstonesDirty:
	case TombstonesForward:
		switch {
		case r.Window != nil || r.Assemble != nil:
			d.at(p+".tombstones", "%s.tombstones: forward applies to plain routes; a window or assembly route's topic holds results keyed by its own key, which a tombstone cannot delete", p)
		case r.Key != "":
			d.at(p+".tombstones", "%s.tombstones: forward writes the tombstone with the input key, but this route writes records keyed by %q: the delete would miss them; remove key or tombstones", p, r.Key)
		}
	default:
		d.at(p+".tombstones", "%s.tombstones must be %q or %q, got %q", p, TombstonesDirty, TombstonesForward, r.Tombstones)
	}
}

// validateValue checks a plain route's value: the input bytes or a
// projection.
func (d *doc) validateValue(p string, r Route) {
	switch r.Value {
	case ValueOriginal:
		if len(r.Project) > 0 {
			d.at(p+".value", "%s.value is %q (the input bytes, untouched) but project is set; remove value or set it to %q", p, ValueOriginal, ValueProjection)
		}
	case ValueProjection:
		if len(r.Project) == 0 {
			d.at(p+".value", "%s.value: projection needs a project mapping of output field to expression", p)
		}
		for _, f := range r.Project {
			d.checkExpr(fieldPath(p+".project", f.Name), f.Expr, false)
		}
	default:
		d.at(p+".value", "%s.value must be %q or %q, got %q", p, ValueOriginal, ValueProjection, r.Value)
	}
}

func (d *doc) validateDirty(useTopic useTopicFunc) {
	c := &d.cfg
	if c.Dirty.Topic == "" {
		d.at("dirty", "the dirty route is required: set dirty.topic (records that fail decode, schema, event time or expressions go there)")
	}
	useTopic("dirty.topic", "the dirty route", false, c.Dirty.Topic)
	if c.Dirty.MaxRecordBytes < 1025 {
		d.at("dirty.max_record_bytes", "dirty.max_record_bytes must be more than 1024 (1024 bytes are kept for the reason headers), got %d", c.Dirty.MaxRecordBytes)
	}
	if c.Dirty.MaxRecordBytes > 1024 && (c.Dirty.TruncateTo < 1 || c.Dirty.TruncateTo > c.Dirty.MaxRecordBytes-1024) {
		d.at("dirty.truncate_to", "dirty.truncate_to must be between 1 and dirty.max_record_bytes - 1024 = %d (room for the reason headers), got %d", c.Dirty.MaxRecordBytes-1024, c.Dirty.TruncateTo)
	}
	if c.Dirty.SLO != nil {
		d.validateShare("dirty.slo", "max_dirty_share", c.Dirty.SLO.MaxDirtyShare)
		d.validateSLOWindow("dirty.slo", c.Dirty.SLO.Window())
	}
	if c.Limits.MaxRecordBytes < 0 {
		d.at("limits.max_record_bytes", "limits.max_record_bytes must be positive (remove it to take each output topic's max.message.bytes), got %d", c.Limits.MaxRecordBytes)
	}
}

// validateSecurity checks each field of the security section on its own:
// names, and that every TLS file is there and holds what it should. The
// checks between fields (a sasl_* protocol needs a username and password,
// a client certificate needs its key, ...) wait for the environment
// overrides, where the password and often the rest come from: Apply makes
// them, still pointing into the file.
func (d *doc) validateSecurity() {
	s := &d.cfg.Security
	d.cfg.src = &source{file: d.file, pos: d.pos}
	if p, ok := normProtocol(s.Protocol); ok {
		s.Protocol = p
	} else {
		d.at("security.protocol", "security.protocol must be one of plaintext, ssl, sasl_plaintext, sasl_ssl; got %q", s.Protocol)
	}
	if s.SASL.Mechanism != "" {
		if m, ok := normMechanism(s.SASL.Mechanism); ok {
			s.SASL.Mechanism = m
		} else {
			d.at("security.sasl.mechanism", "security.sasl.mechanism must be %s; got %q", mechanismNames, s.SASL.Mechanism)
		}
	}
	d.validateOAuth(&s.SASL.OAuth)
	for _, f := range tlsFiles(&s.TLS) {
		if *f.value == "" {
			continue
		}
		if !filepath.IsAbs(*f.value) {
			*f.value = filepath.Join(d.dir, *f.value)
		}
		if err := checkPEMFile(f.kind, *f.value); err != nil {
			d.at(f.path, "%s: %v", f.path, err)
		}
	}
}

// validateOAuth checks the fields of security.sasl.oauth on their own;
// which mechanism they go with waits for Apply.
func (d *doc) validateOAuth(o *OAuth) {
	if o.ClientSecret != "" {
		d.at("security.sasl.oauth.client_secret", "security.sasl.oauth.client_secret may not be in the file: set %s (a Kubernetes Secret)", EnvSASLOAuthClientSecret)
		o.ClientSecret = ""
	}
	if o.TokenURL != "" {
		if err := checkTokenURL(o.TokenURL); err != nil {
			d.at("security.sasl.oauth.token_url", "security.sasl.oauth.token_url: %v", err)
		}
	}
	for i, sc := range o.Scopes {
		if err := checkScope(sc); err != nil {
			d.at(fmt.Sprintf("security.sasl.oauth.scopes[%d]", i), "security.sasl.oauth.scopes[%d]: %v", i, err)
		}
	}
	for k, v := range o.Extensions {
		if err := checkExtension(k, v); err != nil {
			p := fieldPath("security.sasl.oauth.extensions", k)
			d.at(p, "%s: %v", p, err)
		}
	}
}

// checkTokenURL: an absolute https URL, or http to a loopback host (a
// sidecar or a test): the client secret travels in the request.
func checkTokenURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", s)
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	case u.User != nil:
		return fmt.Errorf("%q holds credentials: set the client id in security.sasl.oauth.client_id and the secret in %s", u.Redacted(), EnvSASLOAuthClientSecret)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return fmt.Errorf("%q is plain http: the client secret would cross the network unencrypted; use https (http only to localhost)", s)
	}
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkScope: a scope token of RFC 6749 3.3.
func checkScope(s string) error {
	if s == "" {
		return errors.New("a scope may not be empty")
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '\\' || r > '~' {
			return fmt.Errorf("scope %q holds %q; give each scope as its own list item", s, r)
		}
	}
	return nil
}

var extKeyRe = regexp.MustCompile(`^[A-Za-z]+$`)

// checkExtension: a SASL extension of RFC 7628 3.1 (KIP-342), "auth" being
// the token's own.
func checkExtension(k, v string) error {
	switch {
	case !extKeyRe.MatchString(k):
		return fmt.Errorf("an extension name may hold only letters, got %q", k)
	case k == "auth":
		return errors.New(`"auth" is the token itself and cannot be an extension`)
	case v == "":
		return errors.New("an extension needs a value")
	}
	for _, r := range v {
		if (r < 0x21 || r > 0x7e) && r != ' ' && r != '\t' && r != '\r' && r != '\n' {
			return fmt.Errorf("the value holds %q: only printable ASCII", r)
		}
	}
	return nil
}

// tlsFile is one file field of the TLS section.
type tlsFile struct {
	path, env string
	kind      pemKind
	value     *string
}

func tlsFiles(t *TLS) []tlsFile {
	return []tlsFile{
		{"security.tls.ca_file", "SIDESTREAM_TLS_CA_FILE", pemCA, &t.CAFile},
		{"security.tls.cert_file", "SIDESTREAM_TLS_CERT_FILE", pemCert, &t.CertFile},
		{"security.tls.key_file", "SIDESTREAM_TLS_KEY_FILE", pemKey, &t.KeyFile},
	}
}

// readLimited reads at most limit bytes of a file (a file under /proc
// says its size is 0 and may be endless).
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// cause drops the path from an *fs.PathError, which the message names.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func normProtocol(p string) (string, bool) {
	switch l := strings.ToLower(p); l {
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		return l, true
	}
	return p, false
}

func normMechanism(m string) (string, bool) {
	switch u := strings.ToUpper(m); u {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512, SASLOAuthBearer, SASLAWSMSKIAM:
		return u, true
	}
	return m, false
}

// pemKind is what a TLS file must hold.
type pemKind int

const (
	pemCA         pemKind = iota // one or more CA certificates
	pemCert                      // a certificate chain
	pemKey                       // one unencrypted private key
	pemServerCert                // the HTTP API's own certificate chain
)

// statRegular is os.Stat of a file the config names, with the errors a
// person reads: not found, or not a regular file.
func statRegular(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("file %q not found", path)
		}
		return nil, fmt.Errorf("file %q: %v", path, cause(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", path)
	}
	return fi, nil
}

// maxPEMBytes bounds a TLS file, like maxSchemaBytes.
const maxPEMBytes = 1 << 20

// checkPEMFile reads a TLS file and checks it holds what kind says. It
// never quotes the file's content: a key file is a secret.
func checkPEMFile(kind pemKind, path string) error {
	fi, err := statRegular(path)
	if err != nil {
		return err
	}
	if fi.Size() > maxPEMBytes {
		return fmt.Errorf("file %q is larger than %d KiB", path, maxPEMBytes>>10)
	}
	b, err := readLimited(path, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("file %q cannot be read: %v", path, cause(err))
	}
	var certs, keys, other int
	var encrypted bool
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		switch {
		case blk.Type == "CERTIFICATE":
			if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
				return fmt.Errorf("file %q holds a certificate that does not parse: %v", path, err)
			}
			certs++
		case blk.Type == "ENCRYPTED PRIVATE KEY" || blk.Headers["Proc-Type"] != "":
			encrypted = true
		case strings.HasSuffix(blk.Type, "PRIVATE KEY"):
			keys++
		default:
			other++
		}
	}
	switch kind {
	case pemCA, pemCert, pemServerCert:
		what := "CA certificates"
		switch kind {
		case pemCert:
			what = "the client certificate"
		case pemServerCert:
			what = "the server certificate"
		}
		if certs == 0 {
			return fmt.Errorf("file %q holds no PEM certificate (-----BEGIN CERTIFICATE-----); it must hold %s", path, what)
		}
		if keys > 0 || encrypted {
			return fmt.Errorf("file %q holds a private key next to the certificates; give the key as key_file only", path)
		}
	case pemKey:
		switch {
		case encrypted:
			return fmt.Errorf("file %q holds an encrypted private key; give it unencrypted (PKCS#8 or PKCS#1 PEM, readable only by the router)", path)
		case keys == 0:
			return fmt.Errorf("file %q holds no PEM private key (-----BEGIN PRIVATE KEY-----)", path)
		case keys > 1:
			return fmt.Errorf("file %q holds %d private keys; give exactly one", path, keys)
		}
	}
	return nil
}

func (d *doc) checkExpr(path, src string, asBool bool) {
	_, err := compileExpr(src, asBool, d.fields, d.fns)
	if err == nil {
		return
	}
	if ee, ok := err.(*ExprError); ok {
		if pos, ok := d.exprPos(path, ee); ok {
			d.errAt(pos, "%s: %s", path, ee.Msg)
			return
		}
	}
	d.at(path, "%s: %v", path, err)
}

// exprPos maps a place inside an expression to the file, so an editor
// jumps to the offending token and not to the start of the value. It does
// so only when the value is one line written as it reads (plain, or quoted
// without escapes), which it checks against the source line itself.
func (d *doc) exprPos(path string, e *ExprError) (Pos, bool) {
	n, ok := d.nodes[path]
	if !ok || e.Col < 1 || e.Line > 1 || strings.ContainsAny(n.Value, "\n\r") {
		return Pos{}, false
	}
	lines := strings.Split(string(d.src), "\n")
	if n.Line < 1 || n.Line > len(lines) {
		return Pos{}, false
	}
	line := []rune(strings.TrimSuffix(lines[n.Line-1], "\r"))
	if n.Column < 1 || n.Column > len(line) {
		return Pos{}, false
	}
	rest := string(line[n.Column-1:])
	offset := 0
	switch n.Style {
	case 0:
	case yaml.SingleQuotedStyle:
		rest, offset = strings.TrimPrefix(rest, "'"), 1
		if !strings.HasPrefix(rest, n.Value+"'") {
			return Pos{}, false
		}
	case yaml.DoubleQuotedStyle:
		rest, offset = strings.TrimPrefix(rest, `"`), 1
		if !strings.HasPrefix(rest, n.Value+`"`) {
			return Pos{}, false
		}
	default:
		return Pos{}, false
	}
	if !strings.HasPrefix(rest, n.Value) || e.Col > len([]rune(n.Value))+1 {
		return Pos{}, false
	}
	return Pos{n.Line, n.Column + offset + e.Col - 1}, true
}

func routeNames(rs []Route) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Name != "" && !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r.Name)
		}
	}
	return out
}

// checkBroker checks one bootstrap address. It is done here, offline, so a
// typo fails `router validate` instead of a minute of connection retries.
func checkBroker(b string) error {
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		if !strings.Contains(b, ":") {
			return fmt.Errorf("broker %q needs a port (host:port, e.g. %q)", b, b+":9092")
		}
		return fmt.Errorf("broker %q is not host:port (write an IPv6 address as [::1]:9092)", b)
	}
	if host == "" {
		return fmt.Errorf("broker %q needs a host before the port", b)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("broker %q: port %q is not a number from 1 to 65535", b, port)
	}
	return nil
}

// maxSchemaBytes bounds a schema file, so a path to a device or a huge
// file fails fast instead of hanging `router validate`.
const maxSchemaBytes = 8 << 20

// loadSchema compiles a JSON Schema file given relative to the config dir.
func loadSchema(dir, path string) (*jsonschema.Schema, error) {
	full := path
	if !filepath.IsAbs(path) {
		full = filepath.Join(dir, path)
	}
	fi, err := os.Stat(full)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("schema file %q not found", full)
		}
		return nil, fmt.Errorf("schema file %q: %v", full, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("schema file %q is not a regular file", full)
	}
	if fi.Size() > maxSchemaBytes {
		return nil, fmt.Errorf("schema file %q is larger than %d MiB", full, maxSchemaBytes>>20)
	}
	abs, err := filepath.Abs(full)
	if err != nil {
		return nil, fmt.Errorf("schema file %q: %v", full, err)
	}
	c := jsonschema.NewCompiler()
	s, err := c.Compile(abs)
	if err != nil {
		return nil, fmt.Errorf("schema file %q %s", full, schemaErrMsg(err, abs, full))
	}
	return s, nil
}

// schemaErrMsg says why a schema does not compile in one line. The
// compiler's own text is a tree naming the file by absolute URL; the user
// wrote a relative path, and messages must not depend on the checkout.
func schemaErrMsg(err error, abs, full string) string {
	var (
		sve *jsonschema.SchemaValidationError
		lue *jsonschema.LoadURLError
		msg string
	)
	switch {
	case errors.As(err, &sve):
		msg = "is not a valid JSON Schema: " + firstLeaf(sve.Err.Error())
	case errors.As(err, &lue) && lue.URL == "file://"+filepath.ToSlash(abs):
		msg = "is not valid JSON: " + lue.Err.Error()
	default:
		msg = "does not compile: " + err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
	}
	return strings.ReplaceAll(msg, "file://"+filepath.ToSlash(abs), full)
}

// firstLeaf picks the first innermost cause from the validator's indented
// tree ("- at '/x': ..."): the outer lines only say that allOf failed.
func firstLeaf(tree string) string {
	lines := strings.Split(tree, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "- ") {
			continue
		}
		if i+1 == len(lines) || indent(lines[i+1]) <= indent(l) {
			return strings.TrimPrefix(strings.TrimSpace(l), "- ")
		}
	}
	return lines[0]
}

// validateWindow checks a window route. Its topic receives window results,
// so key, value and project do not apply.
func (d *doc) validateWindow(p string, r Route, useTopic useTopicFunc) {
	w := r.Window
	wp := p + ".window"
	if r.Key != "" {
		d.at(p+".key", "%s.key does not apply to a window route: results are keyed by group key and window start; use window.group_by", p)
	}
	if len(r.Project) > 0 || r.Value == ValueProjection {
		d.at(p+".project", "%s: a window route writes window results; value and project do not apply", p)
	}
	d.validateWindowShape(wp, w)
	ms := func(path string, v time.Duration) {
		if v%time.Millisecond != 0 {
			d.at(path, "%s must be a whole number of milliseconds, got %s", path, v)
		}
	}
	ms(wp+".size", w.Size.D())
	ms(wp+".advance", w.Advance.D())
	ms(wp+".gap", w.Gap.D())
	ms(wp+".grace", w.Grace.D())
	ms(wp+".max_out_of_orderness", w.MaxOutOfOrderness.D())
	if w.Watermark != WatermarkAligned && w.Watermark != WatermarkMax {
		d.at(wp+".watermark", "%s.watermark must be %q or %q, got %q", wp, WatermarkAligned, WatermarkMax, w.Watermark)
	}
	if w.Emit != EmitUpdate && w.Emit != EmitFinal {
		d.at(wp+".emit", "%s.emit must be %q or %q, got %q", wp, EmitUpdate, EmitFinal, w.Emit)
	}
	if w.GroupBy != "" {
		d.checkExpr(wp+".group_by", w.GroupBy, false)
	}
	if w.LateTopic == "" {
		d.at(wp, "%s.late_topic is required: records whose windows are already closed go there, never silently away", wp)
	}
	useTopic(wp+".late_topic", fmt.Sprintf("the late route of %q", r.Name), false, w.LateTopic)
	perRecord := int64(1)
	if w.Type == WindowHopping && w.Advance > 0 {
		perRecord = int64((w.Size + w.Advance - 1) / w.Advance)
	}
	d.validateLimits(wp, r.Name, w.Limits, perRecord, "the route's topic, marked evicted", useTopic)
	d.validateAggregates(wp, w.Aggregates)
}

// validateWindowShape checks the sizes a window type needs and the ones
// it never reads.
func (d *doc) validateWindowShape(wp string, w *Window) {
	switch w.Type {
	case WindowTumbling, WindowHopping:
		if w.Size == 0 {
			d.at(wp, "%s.size is required for a %s window", wp, w.Type)
		}
		if w.Gap != 0 {
			d.at(wp+".gap", "%s.gap applies only to session windows", wp)
		}
		if w.Type == WindowTumbling && w.Advance != 0 {
			d.at(wp+".advance", "%s.advance applies only to hopping windows (a tumbling window advances by its size)", wp)
		}
		if w.Type == WindowHopping {
			switch {
			case w.Advance == 0:
				d.at(wp, "%s.advance is required for a hopping window", wp)
			case w.Advance > w.Size:
				d.at(wp+".advance", "%s.advance %s is larger than size %s: records between windows would belong to none", wp, w.Advance.D(), w.Size.D())
			case w.Size.D()/w.Advance.D() > 1000:
				d.at(wp+".advance", "%s: size/advance is over 1000 windows per record", wp)
			}
		}
	case WindowSession:
		if w.Gap == 0 {
			d.at(wp, "%s.gap is required for a session window", wp)
		}
		if w.Size != 0 || w.Advance != 0 {
			d.at(wp+".size", "%s: size and advance do not apply to session windows (use gap)", wp)
		}
	case "":
		d.at(wp, "%s.type is required: tumbling, hopping or session", wp)
	default:
		d.at(wp+".type", "%s.type must be tumbling, hopping or session, got %q", wp, w.Type)
	}
}

func (d *doc) validateAggregates(wp string, aggs []Aggregate) {
	if len(aggs) == 0 {
		d.at(wp, "%s.aggregates: at least one aggregate is required (e.g. {name: n, fn: count})", wp)
	}
	seen := map[string]bool{}
	for i, a := range aggs {
		ap := fmt.Sprintf("%s.aggregates[%d]", wp, i)
		switch {
		case a.Name == "":
			d.at(ap, "%s.name is required", ap)
		case seen[a.Name]:
			d.at(ap+".name", "duplicate aggregate name %q", a.Name)
		}
		seen[a.Name] = true
		switch {
		case !aggfn.Valid(a.Fn):
			d.at(ap+".fn", "%s.fn must be one of %s; got %q", ap, strings.Join(aggfn.Names, ", "), a.Fn)
		case a.Of == "" && a.Fn != aggfn.Count:
			d.at(ap, "%s.of is required for %s (the expression aggregated)", ap, a.Fn)
		}
		if a.Of != "" {
			d.checkExpr(ap+".of", a.Of, false)
		}
	}
}
