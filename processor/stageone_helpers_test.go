package processor

import "github.com/sidestream/sidestream/pipeline/pipelinetest"

// The topology helpers the processor's tests share with stage two's
// (pipelinetest).
var (
	exampleAt = pipelinetest.ExampleAt
	compileAt = pipelinetest.CompileAt
)
