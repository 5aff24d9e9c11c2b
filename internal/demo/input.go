package demo

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/config"
)

// maxLine bounds one line of an input file: a record's value.
const maxLine = 16 << 20

// inputRecord is one line of an input file, for one input topic.
type inputRecord struct {
	topic string
	value []byte
}

// readInputs reads the --input files: "FILE" for the first input topic,
// "TOPIC=FILE" for the input topic named. Each non-blank line is one
// record's value, its bytes as they are (a line that is not JSON reaches
// the router as it would in production: it goes to dirty).
func readInputs(cfg *config.Config, specs []string) ([]inputRecord, error) {
	topics := inputTopics(cfg)
	var out []inputRecord
	for _, spec := range specs {
		topic, file := topics[0], spec
		if t, f, ok := strings.Cut(spec, "="); ok && slices.Contains(topics, t) {
			topic, file = t, f
		} else if ok && !fileExists(spec) {
			return nil, cliexit.Usage("--input %q: %q is not an input topic of this topology (%s); use TOPIC=FILE or FILE", spec, t, strings.Join(topics, ", "))
		}
		recs, err := readLines(topic, file)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	if len(specs) > 0 && len(out) == 0 {
		return nil, cliexit.Usage("--input: the files hold no record (one JSON value per line)")
	}
	return out, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// readLines reads one input file.
func readLines(topic, file string) ([]inputRecord, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, cliexit.Usage("--input: %v", err)
	}
	defer func() { _ = f.Close() }()
	var out []inputRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		out = append(out, inputRecord{topic: topic, value: bytes.Clone(line)})
	}
	if err := sc.Err(); err != nil {
		return nil, cliexit.Usage("--input %s: line %d: %v", file, len(out)+1, err)
	}
	return out, nil
}

// produceAll writes recs at rate records per second (0: as fast as
// possible) and returns how many the broker acknowledged.
func produceAll(ctx context.Context, brokers []string, recs []*kgo.Record, rate float64, prog *progress) (int64, error) {
	return produce(ctx, brokers, len(recs), rate, prog, func(i int) *kgo.Record { return recs[i] })
}
