package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/topology"
)

// noArgs refuses positional arguments of a command that takes flags only.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("%s: unexpected argument %q (flags only)", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// validation is one file's verdict, as `router validate --format json`
// prints it.
type validation struct {
	File      string    `json:"file"`
	OK        bool      `json:"ok"`
	Inputs    int       `json:"inputs,omitempty"`
	Routes    int       `json:"routes,omitempty"`
	Guarantee string    `json:"guarantee,omitempty"`
	Tests     int       `json:"tests,omitempty"` // a topology test file: its cases
	Problems  []problem `json:"problems,omitempty"`
}

type problem struct {
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: router validate [--format text|json] FILE... (or --config FILE, or SIDESTREAM_CONFIG)")
		fs.PrintDefaults()
	}
	config := fs.String("config", "", "topology file (instead of FILE arguments)")
	format := fs.String("format", "text", "text (FILE:LINE:COL: message) or json (one object, for CI)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return exitError{code: 2, msg: fmt.Sprintf("router validate: --format %q: use text or json", *format)}
	}
	patterns := fs.Args()
	if *config != "" {
		patterns = append([]string{*config}, patterns...)
	}
	if len(patterns) == 0 {
		if env := os.Getenv("SIDESTREAM_CONFIG"); env != "" {
			patterns = []string{env}
		}
	}
	if len(patterns) == 0 {
		return exitError{code: 2, msg: "router validate: name the topology files (router validate FILE...), or --config is required"}
	}
	files, err := expandPatterns(patterns)
	if err != nil {
		return err
	}
	var results []validation
	ok := true
	for _, f := range files {
		v := validateFile(f)
		ok = ok && v.OK
		results = append(results, v)
	}
	if err := printValidations(stdout, *format, ok, results); err != nil {
		return err
	}
	if !ok {
		return exitError{code: 1}
	}
	return nil
}

// expandPatterns: each pattern holding * ? or [ is a glob that must match
// a file; the others are file names as given.
func expandPatterns(patterns []string) ([]string, error) {
	var files []string
	for _, p := range patterns {
		if !strings.ContainsAny(p, "*?[") {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, exitError{code: 2, msg: fmt.Sprintf("router validate: pattern %q: %v", p, err)}
		}
		if len(m) == 0 {
			return nil, exitError{code: 2, msg: fmt.Sprintf("router validate: no file matches %q", p)}
		}
		files = append(files, m...)
	}
	return files, nil
}

// printValidations writes the results as text (FILE:LINE:COL: message) or
// as one JSON object.
func printValidations(stdout io.Writer, format string, ok bool, results []validation) error {
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			OK    bool         `json:"ok"`
			Files []validation `json:"files"`
		}{ok, results}); err != nil {
			return err
		}
	} else {
		for _, v := range results {
			if v.OK && v.Tests > 0 {
				fmt.Fprintf(stdout, "%s: ok (a topology test file: %d cases; its topology has %d inputs, %d routes)\n", v.File, v.Tests, v.Inputs, v.Routes)
				continue
			}
			if v.OK {
				fmt.Fprintf(stdout, "%s: ok (%d inputs, %d routes, guarantee %s)\n", v.File, v.Inputs, v.Routes, v.Guarantee)
				continue
			}
			for _, p := range v.Problems {
				if p.Line > 0 {
					fmt.Fprintf(stdout, "%s:%d:%d: %s\n", v.File, p.Line, p.Col, p.Message)
				} else {
					fmt.Fprintf(stdout, "%s: %s\n", v.File, p.Message)
				}
			}
		}
	}
	return nil
}

// validateFile loads and compiles one topology file, as `router run`
// would before connecting.
func validateFile(path string) validation {
	v := validation{File: path}
	if isTestFile(path) {
		// A topology test file next to its topology (router test):
		// its cases read, and the topology it names validated.
		tf, err := readTestFile(path)
		if err != nil {
			v.Problems = []problem{{Message: err.Error()}}
			return v
		}
		top := tf.Topology
		if !filepath.IsAbs(top) {
			top = filepath.Join(filepath.Dir(path), top)
		}
		tv := validateFile(top)
		tv.File, tv.Tests = path, len(tf.Tests)
		return tv
	}
	cfg, err := topology.LoadFile(path)
	if err != nil {
		var ce *topology.ConfigError
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				v.Problems = append(v.Problems, problem{Line: p.Pos.Line, Col: p.Pos.Col, Message: p.Msg})
			}
		} else {
			v.Problems = []problem{{Message: err.Error()}}
		}
		return v
	}
	// The api section as router run would see it (SIDESTREAM_API_*).
	if err := cfg.ApplyAPI(topology.APIOverridesFromEnv(os.Getenv)); err != nil {
		v.Problems = []problem{{Message: err.Error()}}
		return v
	}
	// The schema_registry section as router run would see it
	// (SIDESTREAM_SCHEMA_REGISTRY_*): a registry format needs a URL.
	if err := cfg.ApplyRegistry(topology.RegistryOverridesFromEnv(os.Getenv)); err != nil {
		v.Problems = []problem{{Message: err.Error()}}
		return v
	}
	if _, err := topology.Compile(cfg, dirOf(path)); err != nil {
		v.Problems = []problem{{Message: err.Error()}}
		return v
	}
	v.OK, v.Inputs, v.Routes, v.Guarantee = true, len(cfg.Inputs), len(cfg.Routes), string(cfg.Guarantee)
	return v
}

// isTestFile reports whether path holds a topology test file (top-level
// topology: and tests:) rather than a topology.
func isTestFile(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var probe map[string]any
	if yaml.Unmarshal(b, &probe) != nil {
		return false
	}
	_, t := probe["tests"]
	_, top := probe["topology"]
	_, app := probe["application_id"]
	return t && top && !app
}
