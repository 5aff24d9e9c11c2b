package runtime

import stageonetest "github.com/sidestream/sidestream/internal/stageone/stageonetest"

// The topology helpers the runtime's tests share with stage one's and
// stage two's (stageonetest).
var (
	exampleAt = stageonetest.ExampleAt
	compileAt = stageonetest.CompileAt
)
