package runtime

import stageonetest "github.com/sidestream/sidestream/internal/stageone/stageonetest"

// The topology helpers the processor's tests share with stage two's
// (pipelinetest).
var (
	exampleAt = stageonetest.ExampleAt
	compileAt = stageonetest.CompileAt
)
