package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ESTarget is an Elasticsearch index whose documents' _id is the record key.
type ESTarget struct {
	URL   string // http://host:9200, user:password@ in it for basic auth
	Index string
}

// esPage is the documents read per search request.
const esPage = 1000

// esScan streams an index's documents sorted by _id (byte order, as the
// topic's keys are), page by page with search_after: one page in memory.
type esScan struct {
	hc    *http.Client
	base  string
	index string
	page  []esHit
	after *string
	done  bool
	// Versions counts documents by their _version (1: written once).
	versions map[int64]int64
}

type esHit struct {
	ID      string         `json:"_id"`
	Version int64          `json:"_version"`
	Source  map[string]any `json:"_source"`
}

func newESScan(ctx context.Context, hc *http.Client, t ESTarget) (*esScan, error) {
	base := strings.TrimRight(t.URL, "/")
	s := &esScan{hc: hc, base: base, index: t.Index, versions: map[int64]int64{}}
	// What the sink has written becomes searchable (refresh_interval).
	if _, err := s.do(ctx, http.MethodPost, "/"+url.PathEscape(t.Index)+"/_refresh", nil); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *esScan) next(ctx context.Context) (string, Doc, bool, error) {
	if len(s.page) == 0 {
		if s.done {
			return "", nil, false, nil
		}
		if err := s.fetch(ctx); err != nil {
			return "", nil, false, err
		}
		if len(s.page) == 0 {
			return "", nil, false, nil
		}
	}
	h := s.page[0]
	s.page = s.page[1:]
	s.versions[h.Version]++
	return h.ID, docFromMap(h.Source), true, nil
}

func (s *esScan) fetch(ctx context.Context) error {
	q := map[string]any{
		"size": esPage, "sort": []any{map[string]string{"_id": "asc"}},
		"version": true, "track_total_hits": false,
	}
	if s.after != nil {
		q["search_after"] = []string{*s.after}
	}
	body, _ := json.Marshal(q)
	b, err := s.do(ctx, http.MethodPost, "/"+url.PathEscape(s.index)+"/_search", body)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var r struct {
		Hits struct {
			Hits []esHit `json:"hits"`
		} `json:"hits"`
	}
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("elasticsearch %s: search reply: %w", s.index, err)
	}
	s.page = r.Hits.Hits
	if len(s.page) < esPage {
		s.done = true
	}
	if n := len(s.page); n > 0 {
		last := s.page[n-1].ID
		s.after = &last
	}
	return nil
}

func (s *esScan) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("elasticsearch %s: %w", s.index, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("elasticsearch %s: %w", s.index, err)
	}
	if resp.StatusCode/100 != 2 {
		if len(b) > 300 {
			b = b[:300]
		}
		return nil, fmt.Errorf("elasticsearch %s %s: %s: %s", method, path, resp.Status, b)
	}
	return b, nil
}

func (s *esScan) close() error { return nil }
