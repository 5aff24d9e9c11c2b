package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// fakeES serves the two requests the audit makes of Elasticsearch: a
// refresh and a search sorted by _id with search_after, from a map.
type fakeES struct {
	mu       sync.Mutex
	docs     map[string]string // _id -> _source JSON
	searches int
}

func newFakeES(t *testing.T, index string, docs map[string]string) (*fakeES, *httptest.Server) {
	f := &fakeES{docs: docs}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.URL.Path {
		case "/" + index + "/_refresh":
			_, _ = io.WriteString(w, `{"_shards":{"failed":0}}`)
		case "/" + index + "/_search":
			f.searches++
			var q struct {
				Size        int      `json:"size"`
				SearchAfter []string `json:"search_after"`
				Sort        []map[string]string
			}
			if err := json.NewDecoder(r.Body).Decode(&q); err != nil || len(q.Sort) != 1 || q.Sort[0]["_id"] != "asc" {
				http.Error(w, "bad search", http.StatusBadRequest)
				return
			}
			ids := make([]string, 0, len(f.docs))
			for id := range f.docs {
				if len(q.SearchAfter) == 0 || id > q.SearchAfter[0] {
					ids = append(ids, id)
				}
			}
			sort.Strings(ids)
			if len(ids) > q.Size {
				ids = ids[:q.Size]
			}
			hits := make([]string, len(ids))
			for i, id := range ids {
				b, _ := json.Marshal(id)
				hits[i] = `{"_id":` + string(b) + `,"_version":1,"_source":` + f.docs[id] + `}`
			}
			_, _ = io.WriteString(w, `{"hits":{"hits":[`+strings.Join(hits, ",")+`]}}`)
		default:
			http.Error(w, `{"error":"index_not_found"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

// fakeTable is what the fake MySQL driver answers to any query: its
// columns (name and type) and rows, in the order given.
type fakeTable struct {
	cols  []string
	types []string
	rows  [][]driver.Value
	query string
}

var (
	fakeMu     sync.Mutex
	fakeTables = map[string]*fakeTable{}
)

func init() { sql.Register("auditfake", fakeDriver{}) }

// openFakeMySQL registers tb under name and opens a *sql.DB on it.
func openFakeMySQL(t *testing.T, name string, tb *fakeTable) *sql.DB {
	fakeMu.Lock()
	fakeTables[name] = tb
	fakeMu.Unlock()
	db, err := sql.Open("auditfake", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

type fakeDriver struct{}

func (fakeDriver) Open(name string) (driver.Conn, error) {
	fakeMu.Lock()
	defer fakeMu.Unlock()
	return &fakeConn{tb: fakeTables[name]}, nil
}

type fakeConn struct{ tb *fakeTable }

func (c *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *fakeConn) Close() error                        { return nil }
func (c *fakeConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (c *fakeConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.tb.query = q
	return &fakeRows{tb: c.tb}, nil
}

type fakeRows struct {
	tb *fakeTable
	i  int
}

func (r *fakeRows) Columns() []string                       { return r.tb.cols }
func (r *fakeRows) ColumnTypeDatabaseTypeName(i int) string { return r.tb.types[i] }
func (r *fakeRows) Close() error                            { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.i >= len(r.tb.rows) {
		return io.EOF
	}
	copy(dest, r.tb.rows[r.i])
	r.i++
	return nil
}
