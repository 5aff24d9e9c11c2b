package stageone

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/sidestream/sidestream/internal/registry"
)

// RegistryDecoder decodes one registry-framed value (registry.Decoder):
// a *registry.RecordError is the record's fault (dirty), any other error
// (a *registry.UnavailableError, ctx's) is the batch's. Stage one holds
// no client: the processor builds the decoders over its registry client
// and hands them in (WithDecoders).
type RegistryDecoder interface {
	Decode(ctx context.Context, value []byte) (*registry.Value, error)
}

var _ RegistryDecoder = (*registry.Decoder)(nil)

// Option configures an Engine.
type Option func(*Engine)

// WithDecoders sets the decoders of the registry-backed inputs, by input
// topic. Every input of format avro, protobuf or json_schema needs one;
// a record of one without it is a BatchError (a wiring mistake no data
// can reach: the processor builds one for each).
func WithDecoders(byTopic map[string]RegistryDecoder) Option {
	return func(e *Engine) { e.regs = byTopic }
}

// BatchError is a failure that is not the record's: the schema registry
// could not answer (or ctx ended while it was asked). Nothing of the
// record is counted; the caller aborts the batch and retries it.
type BatchError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *BatchError) Error() string {
	return "decode " + e.Topic + " record: " + e.Err.Error()
}

func (e *BatchError) Unwrap() error { return e.Err }

// decodeRegistry decodes a registry-framed value with its writer schema:
// the fields the topology reads, the event time by the topology's rules
// (Value.EventTime: a logical time field is taken as the time it is),
// then max_ahead as for JSON.
func (d *decoder) decodeRegistry(ctx context.Context, dec RegistryDecoder, topic string, value []byte, ts time.Time) (*Decoded, *RecordError, error) {
	if dec == nil {
		return nil, nil, fmt.Errorf("input %q has format %s but no schema registry decoder", topic, d.formats[topic])
	}
	v, err := dec.Decode(ctx, value)
	if err != nil {
		var re *registry.RecordError
		if errors.As(err, &re) {
			return nil, &RecordError{Stage: re.Stage, Reason: re.Reason, Err: re.Err}, nil
		}
		return nil, nil, err
	}
	out := &Decoded{Fields: make(map[string]any, len(d.fields)), whole: v.Fields}
	for f := range d.fields {
		if x, ok := v.Fields[f]; ok {
			out.Fields[f] = x
		}
	}
	if d.timeFmt == plan.TimeKafka {
		out.EventTime = ts.UnixMilli()
		return out, nil, nil
	}
	et, re := v.EventTime(d.timeField, d.timeFmt)
	if re != nil {
		return nil, &RecordError{Stage: re.Stage, Reason: re.Reason, Err: re.Err}, nil
	}
	out, rerr := d.bounded(out, et, ts)
	return out, rerr, nil
}
