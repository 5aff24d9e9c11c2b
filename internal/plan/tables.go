package plan

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sidestream/sidestream/internal/config"
)

// Table modes and too-old policies, the model's words.
const (
	TableCurrent = config.TableCurrent
	TableAsOf    = config.TableAsOf
	TooOldOldest = config.TooOldOldest
	TooOldDirty  = config.TooOldDirty
)

// TableNode is a compiled lookup table.
type TableNode struct {
	Name, Topic, Format string
	// Key is the row field that keys it; "" is the record's Kafka key.
	Key string
	// Mode is TableCurrent or TableAsOf.
	Mode string
	// Time is the as_of version's time field; "" is the Kafka timestamp.
	Time     string
	History  time.Duration
	OnTooOld string
	// MaxEntries and MaxBytes bound the rows kept (0: no bound).
	MaxEntries int
	MaxBytes   int64
	// Store is StoreMemory or StorePebble (under Settings.State.Dir).
	Store      string
	Schema     *jsonschema.Schema // nil when none
	SchemaPath string
}

// TableLookup is what the runtime's tables answer for lookup().
type TableLookup = config.TableLookup

// LookupMarks are one record's marks from its lookups (stage one's
// _lookups variable).
type LookupMarks = config.LookupMarks

// ErrTablesNotBound is a lookup before the runtime bound its tables
// (BindTables): an expression evaluated outside a running router.
var ErrTablesNotBound = errors.New("lookup tables are not loaded")

// TableField reads one field of a table's row for the fast form of
// lookup("t", key)?.field (config.TableField).
type TableField = config.TableField

// tableBinding is the runtime's reader of the tables, set once it has
// loaded them; the compiled expressions call through it, and the fast
// forms through field.
type tableBinding struct {
	read  atomic.Pointer[TableLookup]
	field atomic.Pointer[TableField]
}

// readField is the bound TableField; it does not decide before one is
// bound (the VM's lookup() then gives ErrTablesNotBound).
func (b *tableBinding) readField(table string, key any, field string) (any, bool, bool) {
	f := b.field.Load()
	if f == nil {
		return nil, false, false
	}
	return (*f)(table, key, field)
}

func (b *tableBinding) lookup(table string, key any, at int64) (any, bool, error) {
	r := b.read.Load()
	if r == nil {
		return nil, false, fmt.Errorf("lookup(%q): %w", table, ErrTablesNotBound)
	}
	return (*r)(table, key, at)
}

// BindTables makes lookup() read from read (the runtime's tables). A
// plan is bound to one set of tables at a time.
func (t *Plan) BindTables(read TableLookup) { t.tables.read.Store(&read) }

// BindTableFields makes the fast forms of lookup("t", key)?.field read
// from field (the runtime's tables); without it they leave every lookup
// to lookup() (BindTables).
func (t *Plan) BindTableFields(field TableField) { t.tables.field.Store(&field) }

// TableField is what the fast forms of stage one read a lookup() row's
// field with (CompileFastTables); nil when the plan has no tables.
func (t *Plan) TableField() TableField {
	if t.tables == nil || len(t.Tables) == 0 {
		return nil
	}
	return t.tables.readField
}

// Table returns the table named name, or nil.
func (t *Plan) Table(name string) *TableNode {
	for _, tb := range t.Tables {
		if tb.Name == name {
			return tb
		}
	}
	return nil
}

// compileTables compiles the tables and adds lookup() to the functions
// the plan's expressions are compiled with.
func (t *Plan) compileTables(cfg *config.Config, dir string) error {
	t.tables = &tableBinding{}
	for _, tb := range cfg.Tables {
		n := &TableNode{Name: tb.Name, Topic: tb.Topic, Format: tb.Format, Key: tb.Key, Mode: tb.Mode, Time: tb.Time,
			History: tb.History.D(), OnTooOld: tb.OnTooOld, MaxEntries: tb.Limits.MaxEntries, MaxBytes: tb.Limits.MaxBytes, SchemaPath: tb.Schema,
			Store: string(tb.Store)}
		if tb.Schema != "" {
			s, err := config.LoadSchema(dir, tb.Schema)
			if err != nil {
				return fmt.Errorf("table %q: %w", tb.Name, err)
			}
			n.Schema = s
		}
		t.Tables = append(t.Tables, n)
	}
	if len(cfg.Tables) > 0 {
		t.fns = append(append(config.Functions(nil), t.fns...), cfg.TableFunction(t.tables.lookup))
	}
	return nil
}

// DescribedTable is one lookup table.
type DescribedTable struct {
	Name   string `json:"name"`
	Topic  string `json:"topic"`
	Format string `json:"format"`
	// Key is the row field that keys it; "" is the record's Kafka key.
	Key  string `json:"key"`
	Mode string `json:"mode"`
	// History and OnTooOld are the as_of mode's ("" in current).
	History  string `json:"history,omitempty"`
	OnTooOld string `json:"on_too_old,omitempty"`
	Schema   string `json:"schema"`
}

// tables: each table, read by the router stage.
func (g *describer) tables() {
	for _, tb := range g.t.Tables {
		d := DescribedTable{Name: tb.Name, Topic: tb.Topic, Format: tb.Format, Key: tb.Key, Mode: tb.Mode, Schema: tb.SchemaPath}
		label := "table " + tb.Name + "\n" + tb.Mode
		if tb.Mode == TableAsOf {
			d.History, d.OnTooOld = tb.History.String(), tb.OnTooOld
			label += " " + d.History
		}
		g.d.Tables = append(g.d.Tables, d)
		id := "table:" + tb.Name
		g.node("input:"+tb.Topic, NodeInput, tb.Topic)
		g.node(id, NodeTable, label)
		g.edge("input:"+tb.Topic, id, "")
		g.edge(id, describeRouter, "lookup")
	}
}
