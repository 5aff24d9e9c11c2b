package audit

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/readback"
)

// topicStore is the topic's latest value per key, on disk, in key order.
// A value is a kind byte ('v' a value, 't' a tombstone), the partition
// the key was last written to, and the Doc as JSON.
type topicStore struct {
	db *pebble.DB
}

// topicStats is what loading the topic counted.
type topicStats struct {
	records, keys, tombstones, split int64
}

const flushEvery = 4096

func openTopicStore(dir string) (*topicStore, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("open the audit's store in %s: %w", dir, err)
	}
	return &topicStore{db: db}, nil
}

func (s *topicStore) close() error { return s.db.Close() }

// load reads the topic's committed records to their end, the latest per
// key kept. A record without a key is refused: no sink can place it.
func (s *topicStore) load(ctx context.Context, brokers []string, opts []kgo.Opt, topic string) (topicStats, error) {
	var st topicStats
	if err := topicExists(ctx, brokers, opts, topic); err != nil {
		return st, err
	}
	b := s.db.NewIndexedBatch()
	err := readback.Each(ctx, brokers, opts, func(r *kgo.Record) error {
		st.records++
		if len(r.Key) == 0 {
			return fmt.Errorf("%s[%d] offset %d has no key: a sink cannot place it", r.Topic, r.Partition, r.Offset)
		}
		val := make([]byte, 5, 5+len(r.Value))
		val[0] = 'v'
		binary.BigEndian.PutUint32(val[1:], uint32(r.Partition))
		if r.Value == nil {
			val[0] = 't'
		} else {
			d, err := docFromJSON(r.Value)
			if err != nil {
				return fmt.Errorf("%s[%d] offset %d (key %q): %w", r.Topic, r.Partition, r.Offset, r.Key, err)
			}
			j, _ := json.Marshal(d)
			val = append(val, j...)
		}
		if old, closer, err := b.Get(r.Key); err == nil {
			if binary.BigEndian.Uint32(old[1:5]) != uint32(r.Partition) {
				st.split++
			}
			_ = closer.Close()
		} else if !errors.Is(err, pebble.ErrNotFound) {
			return err
		}
		if err := b.Set(r.Key, val, nil); err != nil {
			return err
		}
		if b.Count() >= flushEvery {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b = s.db.NewIndexedBatch()
		}
		return nil
	}, topic)
	if err == nil {
		err = b.Commit(pebble.NoSync)
	}
	if err != nil {
		return st, fmt.Errorf("read topic %s: %w", topic, err)
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return st, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if it.Value()[0] == 't' {
			st.tombstones++
		} else {
			st.keys++
		}
	}
	return st, it.Error()
}

// topicExists fails at once on a topic the brokers do not know (the
// read-back would wait for its end offsets until the timeout).
func topicExists(ctx context.Context, brokers []string, opts []kgo.Opt, topic string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("list topic %s: %w", topic, err)
	}
	if d, ok := td[topic]; !ok || d.Err != nil {
		return fmt.Errorf("topic %s does not exist", topic)
	}
	return nil
}

// topicIter walks the live keys (tombstones skipped) in key order.
type topicIter struct {
	it      *pebble.Iterator
	started bool
}

func (s *topicStore) iter() (*topicIter, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &topicIter{it: it}, nil
}

func (t *topicIter) next(context.Context) (string, Doc, bool, error) {
	for {
		if !t.started {
			t.started = true
			t.it.First()
		} else {
			t.it.Next()
		}
		if !t.it.Valid() {
			return "", nil, false, t.it.Error()
		}
		v := t.it.Value()
		if v[0] == 't' {
			continue
		}
		var d Doc
		if err := json.Unmarshal(v[5:], &d); err != nil {
			return "", nil, false, err
		}
		return string(t.it.Key()), d, true, nil
	}
}

func (t *topicIter) close() error { return t.it.Close() }

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
