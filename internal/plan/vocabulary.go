package plan

import "github.com/sidestream/sidestream/internal/config"

// The words of the config model the runtime and both stages speak, named
// once here so that they read the plan and never import the model
// (.golangci.yml, plan-only): the compiled expression and its fast form,
// the connect-json field types, the sections' enum values they switch on.
// Each is the model's own (an alias or the same constant), so the two
// cannot drift.

// Compiled expressions and formats.
type (
	Expr          = config.Expr
	Fast          = config.Fast
	FastString    = config.FastString
	ConnectSchema = config.ConnectSchema
	ConnectField  = config.ConnectField
	Limits        = config.Limits
	Client        = config.Client
)

// CompileFast is an expression's fast form (config.CompileFast).
var CompileFast = config.CompileFast

// CompileFastTables is an expression's fast form that also reads a
// field of a lookup() row (config.CompileFastTables).
var CompileFastTables = config.CompileFastTables

// CompileFastString is a string-valued expression's fast form
// (config.CompileFastString).
var CompileFastString = config.CompileFastString

// TopicNameProblem says why a name is not a valid Kafka topic name, ""
// when it is one (config.TopicNameProblem).
var TopicNameProblem = config.TopicNameProblem

// AvroType is the Avro type of a connect-json field type.
var AvroType = config.AvroType

// RegistryFormat says whether an input format is read through the schema
// registry.
var RegistryFormat = config.RegistryFormat

// ErrNoBrokers: a plan without brokers cannot run.
var ErrNoBrokers = config.ErrNoBrokers

// Metadata variables of an expression.
const (
	MetaKey       = config.MetaKey
	MetaTopic     = config.MetaTopic
	MetaPartition = config.MetaPartition
	MetaOffset    = config.MetaOffset
	MetaTimestamp = config.MetaTimestamp
	MetaEventTime = config.MetaEventTime
	MetaHeaders   = config.MetaHeaders
	MetaLookups   = config.MetaLookups
)

// Connect-json field types.
const (
	ConnectString  = config.ConnectString
	ConnectInt64   = config.ConnectInt64
	ConnectFloat64 = config.ConnectFloat64
	ConnectBoolean = config.ConnectBoolean
)

// Enum values of the sections.
const (
	ExactlyOnce        = config.ExactlyOnce
	AtLeastOnce        = config.AtLeastOnce
	WatermarkAligned   = config.WatermarkAligned
	TimeEpochSecs      = config.TimeEpochSecs
	TimeEpochMillis    = config.TimeEpochMillis
	TimeRFC3339        = config.TimeRFC3339
	TimeKafka          = config.TimeKafka
	ValueProjection    = config.ValueProjection
	StorePebble        = config.StorePebble
	OverflowEvict      = config.OverflowEvict
	WindowTumbling     = config.WindowTumbling
	WindowHopping      = config.WindowHopping
	WindowSession      = config.WindowSession
	StartLatest        = config.StartLatest
	RetentionFail      = config.RetentionFail
	RepartitionHeaders = config.RepartitionHeaders
	MatchAll           = config.MatchAll
	GapSkip            = config.GapSkip
	FirstWins          = config.FirstWins
	EmitFinal          = config.EmitFinal
	ClockEvent         = config.ClockEvent
	AheadClamp         = config.AheadClamp
	EnvStateDir        = config.EnvStateDir
)
