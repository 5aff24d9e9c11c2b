package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// MySQLTarget is a table with one row per record key, the key in KeyColumn
// (the JDBC sink's primary key; "id" for deploy/connect/mysql-sink.properties).
type MySQLTarget struct {
	DB        *sql.DB
	Table     string
	KeyColumn string
}

// mysqlScan streams a table's rows in the byte order of their key (the
// column's collation may fold case; the topic's order is bytes). The
// driver reads rows as they come: one row in memory.
type mysqlScan struct {
	rows  *sql.Rows
	cols  []string
	num   []bool
	key   int
	vals  []sql.RawBytes
	ptrs  []any
	table string
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func newMySQLScan(ctx context.Context, t MySQLTarget) (*mysqlScan, error) {
	key := t.KeyColumn
	if key == "" {
		key = "id"
	}
	q := fmt.Sprintf("SELECT * FROM %s ORDER BY CAST(%s AS BINARY)", quoteIdent(t.Table), quoteIdent(key))
	rows, err := t.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("mysql table %s: %w", t.Table, err)
	}
	s := &mysqlScan{rows: rows, key: -1, table: t.Table}
	types, err := rows.ColumnTypes()
	if err != nil {
		_ = rows.Close()
		return nil, fmt.Errorf("mysql table %s: %w", t.Table, err)
	}
	for i, ct := range types {
		s.cols = append(s.cols, ct.Name())
		s.num = append(s.num, numericType(ct.DatabaseTypeName()))
		if strings.EqualFold(ct.Name(), key) {
			s.key = i
		}
	}
	if s.key < 0 {
		_ = rows.Close()
		return nil, fmt.Errorf("mysql table %s has no key column %q", t.Table, key)
	}
	s.vals = make([]sql.RawBytes, len(types))
	s.ptrs = make([]any, len(types))
	for i := range s.vals {
		s.ptrs[i] = &s.vals[i]
	}
	return s, nil
}

// numericType: the MySQL types whose text is a number.
func numericType(name string) bool {
	switch strings.TrimPrefix(strings.ToUpper(name), "UNSIGNED ") {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "DECIMAL", "NUMERIC", "FLOAT", "DOUBLE", "REAL", "BIT", "BOOL", "BOOLEAN":
		return true
	}
	return false
}

func (s *mysqlScan) next(context.Context) (string, Doc, bool, error) {
	if !s.rows.Next() {
		if err := s.rows.Err(); err != nil {
			return "", nil, false, fmt.Errorf("mysql table %s: %w", s.table, err)
		}
		return "", nil, false, nil
	}
	if err := s.rows.Scan(s.ptrs...); err != nil {
		return "", nil, false, fmt.Errorf("mysql table %s: %w", s.table, err)
	}
	d := make(Doc, len(s.cols)-1)
	for i, v := range s.vals {
		if i == s.key || v == nil {
			continue
		}
		if s.num[i] {
			d[s.cols[i]], _ = canonicalNumber(string(v))
		} else {
			d[s.cols[i]] = "s:" + string(v)
		}
	}
	return string(s.vals[s.key]), d, true, nil
}

func (s *mysqlScan) close() error { return s.rows.Close() }
