package audit

import (
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/go-sql-driver/mysql" // the MySQL sink's table
)

// Sinks names the stores a topic is compared with, as router audit's
// flags give them; an empty URL or DSN leaves that store out.
type Sinks struct {
	ESURL, ESIndex                 string
	MySQLDSN, MySQLTable, MySQLKey string
}

// Open sets opts' Elasticsearch and MySQL targets (an index or table
// named by no flag is the topic, lower-cased, as the connectors name
// them); close releases the MySQL connection.
func (s Sinks) Open(opts *Options) (close func(), err error) {
	close = func() {}
	if s.ESURL != "" {
		opts.Elasticsearch = &ESTarget{URL: s.ESURL, Index: orLower(s.ESIndex, opts.Topic)}
	}
	if s.MySQLDSN != "" {
		db, err := sql.Open("mysql", s.MySQLDSN)
		if err != nil {
			return nil, fmt.Errorf("--mysql-dsn: %w", err)
		}
		close = func() { _ = db.Close() }
		opts.MySQL = &MySQLTarget{DB: db, Table: orLower(s.MySQLTable, opts.Topic), KeyColumn: s.MySQLKey}
	}
	return close, nil
}

func orLower(v, topic string) string {
	if v != "" {
		return v
	}
	return strings.ToLower(topic)
}
