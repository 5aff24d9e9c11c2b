package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Table modes (tables[].mode).
const (
	// TableCurrent keeps the latest row of each key, as Kafka Streams'
	// GlobalKTable: a lookup sees the row of the moment it runs.
	TableCurrent = "current"
	// TableAsOf keeps each key's versions by their time for a history: a
	// lookup sees the version valid at the record's event time.
	TableAsOf = "as_of"
)

// What an as_of lookup older than the history does (tables[].on_too_old).
const (
	// TooOldOldest gives the oldest version kept (counted as too_old;
	// every output record of the record carries wire.HeaderLookupTooOld).
	TooOldOldest = "oldest"
	// TooOldDirty sends the record to dirty (expression_error).
	TooOldDirty = "dirty"
)

// LookupFunction is the name of the expression function that reads a
// table: lookup("merchants", merchant_id).
const LookupFunction = "lookup"

// DefaultTableHistory is how long an as_of table keeps the versions it
// replaced.
const DefaultTableHistory = 7 * 24 * time.Hour

// Table is a lookup table: a compacted topic every instance reads whole,
// which expressions read with lookup(name, key).
type Table struct {
	// Name is what lookup() calls it by.
	Name string `yaml:"name"`
	// Topic is the (compacted) topic of the rows; it must exist.
	Topic string `yaml:"topic"`
	// Format of the rows: json (a JSON object each), or a registry
	// format (avro, protobuf, json_schema) in the Confluent wire format,
	// decoded with its writer schema as an input's records are.
	Format string `yaml:"format"`
	// Schema is a JSON Schema file of the rows (relative to the config
	// file): expressions are type-checked against its fields.
	Schema string `yaml:"schema"`
	// Key is the top-level field of a row that keys it; empty: the
	// record's Kafka key.
	Key string `yaml:"key"`
	// Mode is current or as_of.
	Mode string `yaml:"mode"`
	// Time is the as_of version's time: a top-level field holding epoch
	// milliseconds; empty: the record's Kafka timestamp.
	Time string `yaml:"time"`
	// History is how far behind the table's latest version time an as_of
	// table keeps the versions it replaced.
	History Duration `yaml:"history"`
	// OnTooOld is what an as_of lookup before the history does: oldest
	// or dirty.
	OnTooOld string `yaml:"on_too_old"`
	// Limits bound the rows kept (default no bound).
	Limits TableLimits `yaml:"limits"`
	// Store is where the rows are kept: memory (the whole topic read on
	// every start), or pebble (also on disk under state.dir, with a
	// checkpoint: a restart reads only the records written since).
	Store StoreKind `yaml:"store"`
}

// TableLimits bound one table's memory. Past a limit a new key is
// refused (counted); a key already kept is still updated.
type TableLimits struct {
	// MaxEntries bounds the keys (current) or versions (as_of) kept.
	MaxEntries int `yaml:"max_entries"`
	// MaxBytes bounds the estimated bytes of the kept rows.
	MaxBytes int64 `yaml:"max_bytes"`
}

var tableNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// tableSettings are the tables section's settings.
var tableSettings = []Setting{
	{Path: "tables", Type: tItems, Doc: "lookup tables: compacted topics every instance reads whole, read by `lookup(name, key)`", Notes: "lookup tables: each a compacted topic every instance reads from its start before it processes records, then follows; expressions read a row with `lookup(\"name\", key)` (see [Lookup tables](../lookup-tables.md#lookup-tables-enrichment-from-compacted-topics))"},
	{Path: "tables[].name", Type: tString, Required: true, Doc: "what `lookup()` calls it by; lower-case, unique"},
	{Path: "tables[].topic", Type: tString, Required: true, Doc: "the rows' topic (compacted); it must exist"},
	{Path: "tables[].format", Type: tString, Default: InputJSON, Enum: []string{InputJSON, InputAvro, InputProtobuf, InputJSONSchema}, Doc: "the rows' format: a JSON object each, or the Confluent wire format decoded with the writer schema from `schema_registry`"},
	{Path: "tables[].schema", Type: tString, Doc: "`json`: a JSON Schema file of the rows: expressions are type-checked against its fields"},
	{Path: "tables[].key", Type: tString, Doc: "the top-level field that keys a row; empty is the record's Kafka key"},
	{Path: "tables[].mode", Type: tString, Default: TableCurrent, Enum: []string{TableCurrent, TableAsOf}, Doc: "the latest row of each key, or the version valid at the record's event time"},
	{Path: "tables[].time", Type: tString, Doc: "`as_of`: the field of a version's time (epoch ms); empty is the record's Kafka timestamp"},
	{Path: "tables[].history", Type: tDuration, Default: dur(DefaultTableHistory), Doc: "`as_of`: how far behind the latest version time replaced versions are kept"},
	{Path: "tables[].on_too_old", Type: tString, Default: TooOldOldest, Enum: []string{TooOldOldest, TooOldDirty}, Doc: "`as_of`: a lookup before the history: the oldest version kept (counted), or dirty"},
	{Path: "tables[].limits", Type: tSection, Doc: "bound the table's memory; default no bound"},
	{Path: "tables[].limits.max_entries", Type: tInt, Min: "0", Doc: "keys (`current`) or versions (`as_of`) kept; past it a new key is refused (counted)"},
	{Path: "tables[].limits.max_bytes", Type: tInt, Min: "0", Doc: "estimated bytes of the kept rows; past it a new key is refused (counted)"},
	{Path: "tables[].store", Type: tString, Default: string(StoreMemory), Enum: []string{string(StoreMemory), string(StorePebble)}, Doc: "in memory (the whole topic read on every start), or also on disk with a checkpoint", Notes: "where the table keeps its rows: `memory` (every start reads the whole topic) or `pebble` (also on disk under `state.dir`, in `<dir>/tables/<name>`, with a checkpoint of the topic's offsets: a restart reads only the records written since, or the whole topic again when the table's settings or its topic changed). Lookups read memory with either. Independent of `state.store`; `pebble` needs `state.dir`. See [Lookup tables](../lookup-tables.md#the-store-and-its-checkpoint)"},
}

// validateTables checks the tables section; useTopic keeps a table's
// topic apart from every output.
func (d *doc) validateTables(useTopic useTopicFunc) {
	seen := map[string]string{}
	for i, t := range d.cfg.Tables {
		p := fmt.Sprintf("tables[%d]", i)
		switch {
		case t.Name == "":
			d.at(p, "%s: name is required", p)
		case !tableNameRe.MatchString(t.Name):
			d.at(p+".name", "table name %q: lower-case letters, digits, '_' and '-', starting with a letter", t.Name)
		case seen[t.Name] != "":
			d.at(p+".name", "table %q is declared twice (first at %s)", t.Name, seen[t.Name])
		default:
			seen[t.Name] = p
		}
		if t.Topic == "" {
			d.at(p, "%s: topic is required", p)
		}
		useTopic(p+".topic", fmt.Sprintf("table %q", t.Name), true, t.Topic)
		d.validateTableFormat(p, t)
		d.validateTableMode(p, t)
		if t.Store != StoreMemory && t.Store != StorePebble {
			d.at(p+".store", "%s.store must be %q or %q, got %q", p, StoreMemory, StorePebble, t.Store)
		}
		if t.Limits.MaxEntries < 0 {
			d.at(p+".limits.max_entries", "%s.limits.max_entries must not be negative", p)
		}
		if t.Limits.MaxBytes < 0 {
			d.at(p+".limits.max_bytes", "%s.limits.max_bytes must not be negative", p)
		}
		if t.Schema != "" && t.Format == InputJSON {
			if _, err := loadSchema(d.dir, t.Schema); err != nil {
				d.at(p+".schema", "%v", err)
			}
		}
	}
	if len(d.cfg.Tables) > 0 && d.fns.has(LookupFunction) {
		d.at("tables", "a function named %q is registered by the program: it would hide the tables' lookup", LookupFunction)
	}
}

// validateTableFormat checks a table's format as an input's: json or a
// registry format, and a JSON Schema file only with json (a registry
// format's schema is the writer's). That a registry format has a
// registry URL waits for Apply, as for inputs (applyRegistry).
func (d *doc) validateTableFormat(p string, t Table) {
	switch {
	case t.Format == InputJSON:
	case RegistryFormat(t.Format):
		if t.Schema != "" {
			d.at(p+".schema", "%s.schema (a JSON Schema file) goes only with format json; a table of format %s is decoded with its writer schema from the schema registry", p, t.Format)
		}
	default:
		d.at(p+".format", "table format %q is not supported (supported: json, avro, protobuf, json_schema)", t.Format)
	}
}

// tablesNeedRegistry: every table of a registry format, when there is
// no registry URL, at its format's FILE:LINE:COL (applyRegistry).
func (c *Config) tablesNeedRegistry() []string {
	k := newOverrideCheck(c, "tables", nil)
	for i, t := range c.Tables {
		if RegistryFormat(t.Format) {
			k.report(fmt.Sprintf("tables[%d].format", i), "table %q has format %s, which needs a schema registry: set schema_registry.url (or %s)", t.Name, t.Format, EnvRegistryURL)
		}
	}
	return k.probs
}

func (d *doc) validateTableMode(p string, t Table) {
	switch t.Mode {
	case TableCurrent:
		if t.Time != "" {
			d.at(p+".time", "%s.time is read only in mode %q", p, TableAsOf)
		}
	case TableAsOf:
		if t.History <= 0 {
			d.at(p+".history", "%s.history must be positive", p)
		}
	default:
		d.at(p+".mode", "%s.mode must be %q or %q, got %q", p, TableCurrent, TableAsOf, t.Mode)
	}
	if t.OnTooOld != TooOldOldest && t.OnTooOld != TooOldDirty {
		d.at(p+".on_too_old", "%s.on_too_old must be %q or %q, got %q", p, TooOldOldest, TooOldDirty, t.OnTooOld)
	}
}

// TableNames are the declared tables' names.
func (c *Config) TableNames() []string {
	out := make([]string, 0, len(c.Tables))
	for _, t := range c.Tables {
		out = append(out, t.Name)
	}
	return out
}

// TableLookup reads a row of a table at an event time (epoch ms): the
// row in the value model, or nil, and whether it is an answer too old
// (on_too_old: oldest gave the oldest version kept). The runtime's
// tables provide it.
type TableLookup func(table string, key any, eventTime int64) (row any, tooOld bool, err error)

// LookupMarks are what one record's lookups answered that its output
// records say (wire.HeaderLookupTooOld): the tables that answered too
// old, in the order first met. Stage one gives each record its own (the
// _lookups variable of lookup's calls); nil marks nothing.
type LookupMarks struct {
	TooOld []string
}

// markTooOld adds table to the too-old tables once.
func (m *LookupMarks) markTooOld(table string) {
	if m != nil && !slices.Contains(m.TooOld, table) {
		m.TooOld = append(m.TooOld, table)
	}
}

// Reset forgets the marks, keeping their memory.
func (m *LookupMarks) Reset() { m.TooOld = m.TooOld[:0] }

// tableFields are a table's top-level fields when its schema is closed
// (additionalProperties: false), else nil: any field may be there.
type tableFields map[string]bool

// TableFunction is lookup(table, key) for the config's tables, reading
// with read: expressions compile it in, and validation checks its calls
// (a declared table named by a constant; the fields of a closed schema).
func (c *Config) TableFunction(read TableLookup) Function {
	tables := map[string]tableFields{}
	for _, t := range c.Tables {
		tables[t.Name] = c.tableFields[t.Name]
	}
	return Function{Name: LookupFunction, eventTime: true, marks: true, tables: tables, Fn: func(params ...any) (any, error) {
		// The table and key, then the event time and the marks (callArgs).
		if len(params) != 4 {
			return nil, fmt.Errorf("lookup takes a table name and a key, got %d arguments", len(params)-2)
		}
		name, ok := params[0].(string)
		if !ok {
			return nil, fmt.Errorf("lookup: the table name must be a string, got %T", params[0])
		}
		var at int64
		switch v := params[2].(type) {
		case int:
			at = int64(v)
		case int64:
			at = v
		}
		row, tooOld, err := read(name, params[1], at)
		if tooOld {
			marks, _ := params[3].(*LookupMarks)
			marks.markTooOld(name)
		}
		return row, err
	}}
}

// withTables adds the tables' lookup to fns for validation: calls are
// checked, never run.
func (d *doc) withTables(fns Functions) Functions {
	if len(d.cfg.Tables) == 0 {
		return fns
	}
	d.cfg.tableFields = map[string]tableFields{}
	for i, t := range d.cfg.Tables {
		if RegistryFormat(t.Format) {
			if f, ok := d.registryTableFields(i, t); ok {
				d.cfg.tableFields[t.Name] = f
			}
			continue
		}
		if t.Schema == "" {
			continue
		}
		if s, err := loadSchema(d.dir, t.Schema); err == nil {
			if f, ok := closedFields(s); ok {
				d.cfg.tableFields[t.Name] = f
			}
		}
	}
	f := d.cfg.TableFunction(func(string, any, int64) (any, bool, error) { return nil, false, nil })
	return append(append(Functions(nil), fns...), f)
}

// registryTableFields are the top-level fields of a registry table's
// writer schema, when router validate --registry gave it (by the table's
// topic, as an input's) and it closes them; a schema the registry does
// not have is a problem at the table's topic.
func (d *doc) registryTableFields(i int, t Table) (tableFields, bool) {
	sf, ok := d.schemas[t.Topic]
	if sf.Problem != "" {
		d.at(fmt.Sprintf("tables[%d].topic", i), "tables[%d]: %s", i, sf.Problem)
	}
	if !ok || sf.Fields == nil {
		return nil, false
	}
	if _, open := sf.Fields.Has(nil); open {
		return nil, false
	}
	out := tableFields{}
	for _, name := range sf.Fields.Names(nil) {
		out[name] = true
	}
	return out, true
}

// closedFields are a closed schema's top-level properties.
func closedFields(s *jsonschema.Schema) (tableFields, bool) {
	for s.Ref != nil && s.Properties == nil {
		s = s.Ref
	}
	if b, ok := s.AdditionalProperties.(bool); !ok || b || len(s.PatternProperties) > 0 {
		return nil, false
	}
	out := tableFields{}
	for name := range s.Properties {
		out[name] = true
	}
	return out, true
}

// lookupCheck checks every lookup call of tree: two arguments, the first
// a constant naming a declared table; a field read from the row of a
// table whose schema is closed must be one of its properties.
func lookupCheck(src string, tree *ast.Node, fns Functions) *ExprError {
	var tables map[string]tableFields
	for _, f := range fns {
		if f.Name == LookupFunction && f.tables != nil {
			tables = f.tables
		}
	}
	if tables == nil {
		return nil
	}
	v := &lookupVisitor{tables: tables}
	ast.Walk(tree, v)
	if v.err == nil {
		return nil
	}
	return exprErrAt(src, v.at.Location(), v.err.Error())
}

type lookupVisitor struct {
	tables map[string]tableFields
	at     ast.Node
	err    error
}

func (v *lookupVisitor) fail(n ast.Node, format string, args ...any) {
	if v.err == nil {
		v.at, v.err = n, fmt.Errorf(format, args...)
	}
}

// Visit implements ast.Visitor.
func (v *lookupVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.CallNode:
		id, ok := x.Callee.(*ast.IdentifierNode)
		if !ok || id.Value != LookupFunction {
			return
		}
		if len(x.Arguments) != 2 {
			v.fail(x, "lookup takes a table name and a key, as lookup(\"merchants\", merchant_id)")
			return
		}
		s, ok := x.Arguments[0].(*ast.StringNode)
		if !ok {
			v.fail(x.Arguments[0], "lookup's table must be a quoted name, as lookup(\"merchants\", merchant_id)")
			return
		}
		if _, ok := v.tables[s.Value]; !ok {
			v.fail(s, "no table %q (tables: %s)", s.Value, strings.Join(slices.Sorted(maps.Keys(v.tables)), ", "))
		}
	case *ast.MemberNode:
		c, ok := x.Node.(*ast.CallNode)
		if !ok {
			return
		}
		id, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || id.Value != LookupFunction || len(c.Arguments) < 1 {
			return
		}
		s, ok1 := c.Arguments[0].(*ast.StringNode)
		p, ok2 := x.Property.(*ast.StringNode)
		if !ok1 || !ok2 {
			return
		}
		if fields := v.tables[s.Value]; fields != nil && !fields[p.Value] {
			v.fail(x.Property, "table %q has no field %q (its schema's fields: %s)", s.Value, p.Value, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
	}
}
