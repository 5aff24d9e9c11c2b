package serve

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
)

// LoadTopology loads, applies overrides, and compiles. With plaintext
// (the demo's embedded broker) the security settings of the file and the
// environment are dropped, and with a registry URL in o (the demo's
// in-process registry) the file's schema_registry section too. A file
// that does not load is a cliexit.Error with code 1 holding every
// problem at FILE:LINE:COL.
func LoadTopology(path string, o config.Overrides, plaintext bool) (*plan.Plan, error) {
	if path == "" {
		return nil, cliexit.Usage("--config is required")
	}
	cfg, err := config.LoadFile(path)
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return nil, cliexit.Error{Code: 1, Msg: ce.Error()}
		}
		return nil, err
	}
	if plaintext {
		cfg.Security = config.Security{Protocol: config.ProtocolPlaintext}
		o.Security = config.SecurityOverrides{}
		if o.Registry.URL != "" {
			// The demo's in-process registry: no auth, no TLS.
			cfg.SchemaRegistry = config.SchemaRegistry{}
		}
	}
	if err := cfg.Apply(o); err != nil {
		return nil, err
	}
	if err := cfg.ApplyAPI(config.APIOverridesFromEnv(os.Getenv)); err != nil {
		return nil, err
	}
	return plan.Compile(cfg, DirOf(path))
}

// Overrides are the environment's overrides (SIDESTREAM_BROKERS ...)
// with the flags' over them; an empty flag overrides nothing.
func Overrides(brokers, appID, guarantee, commitInterval string) config.Overrides {
	p := config.Overrides{ApplicationID: appID, Guarantee: guarantee, CommitInterval: commitInterval}
	if brokers != "" {
		p.Brokers = strings.Split(brokers, ",")
	}
	return config.OverridesFromEnv(os.Getenv).Merge(p)
}

// DirOf is the folder of a topology file, with its trailing slash ("" for
// a bare name): the base of the paths the file names.
func DirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return ""
}

// NewLogger is the logger of --log-level and --log-format.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, o)), nil
	}
	return nil, fmt.Errorf("log format %q: use text or json", format)
}
