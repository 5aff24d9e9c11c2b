package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
)

// Result is one file's verdict, as `router validate --format json`
// prints it.
type Result struct {
	File      string    `json:"file"`
	OK        bool      `json:"ok"`
	Inputs    int       `json:"inputs,omitempty"`
	Routes    int       `json:"routes,omitempty"`
	Guarantee string    `json:"guarantee,omitempty"`
	Tests     int       `json:"tests,omitempty"` // a topology test file: its cases
	Problems  []Problem `json:"problems,omitempty"`
	// Notes say what could not be checked (a registry-backed input's
	// fields without a registry); they do not fail the file.
	Notes []string `json:"notes,omitempty"`
	// Warnings are what is valid but likely not meant (a routing.default
	// no record can reach); they do not fail the file.
	Warnings []Problem `json:"warnings,omitempty"`
}

type Problem struct {
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
}

// Options are what validate checks against.
type Options struct {
	// Registry is the schema registry URL to check the registry-backed
	// inputs' fields against ("": SIDESTREAM_SCHEMA_REGISTRY_URL, then
	// the file's schema_registry.url).
	Registry string
	// Offline never asks a registry: the registry-backed inputs get a
	// note instead.
	Offline bool
	// TestFile checks a topology test file (router test's topotest.Check,
	// wired by cmd/router: only the binary imports the test engine): the
	// topology it names (relative to the test file), its number of cases,
	// or its problems at their line:col.
	TestFile func(path string) (topology string, cases int, problems []Problem)
}

// Files validates the files the patterns name (globs allowed), each as
// router run would load it, and reports whether every one is valid. A
// pattern that matches nothing is a usage error.
func Files(patterns []string, o Options) ([]Result, bool, error) {
	if err := CheckRegistryURL(o.Registry); err != nil {
		return nil, false, err
	}
	files, err := expandPatterns(patterns)
	if err != nil {
		return nil, false, err
	}
	var results []Result
	ok := true
	for _, f := range files {
		v := o.file(f)
		ok = ok && v.OK
		results = append(results, v)
	}
	return results, ok, nil
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
			return nil, cliexit.Usage("router validate: pattern %q: %v", p, err)
		}
		if len(m) == 0 {
			return nil, cliexit.Usage("router validate: no file matches %q", p)
		}
		files = append(files, m...)
	}
	return files, nil
}

// printValidations writes the results as text (FILE:LINE:COL: message) or
// as one JSON object.
func Print(stdout io.Writer, format string, ok bool, results []Result) error {
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			OK    bool     `json:"ok"`
			Files []Result `json:"files"`
		}{ok, results}); err != nil {
			return err
		}
	} else {
		for _, v := range results {
			printResult(stdout, v)
		}
	}
	return nil
}

// printValidation writes one file's verdict as text: ok or its problems,
// then its notes.
func printResult(stdout io.Writer, v Result) {
	switch {
	case v.OK && v.Tests > 0:
		fmt.Fprintf(stdout, "%s: ok (a topology test file: %d cases; its topology has %d inputs, %d routes)\n", v.File, v.Tests, v.Inputs, v.Routes)
	case v.OK:
		fmt.Fprintf(stdout, "%s: ok (%d inputs, %d routes, guarantee %s)\n", v.File, v.Inputs, v.Routes, v.Guarantee)
	}
	for _, p := range v.Problems {
		if p.Line > 0 {
			fmt.Fprintf(stdout, "%s:%d:%d: %s\n", v.File, p.Line, p.Col, p.Message)
		} else {
			fmt.Fprintf(stdout, "%s: %s\n", v.File, p.Message)
		}
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(stdout, "%s:%d:%d: warning: %s\n", v.File, w.Line, w.Col, w.Message)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(stdout, "%s: note: %s\n", v.File, n)
	}
}

// validateFile loads and compiles one topology file, as `router run`
// would before connecting, and checks the fields the expressions read
// against the registry-backed inputs' writer schemas (registryURL, else
// SIDESTREAM_SCHEMA_REGISTRY_URL, else the file's schema_registry.url).
func (o Options) file(path string) Result {
	v := Result{File: path}
	if o.TestFile != nil && isTestFile(path) {
		// A topology test file next to its topology (router test):
		// its cases read, and the topology it names validated.
		top, cases, probs := o.TestFile(path)
		if probs != nil {
			v.Problems = probs
			return v
		}
		if !filepath.IsAbs(top) {
			top = filepath.Join(filepath.Dir(path), top)
		}
		tv := o.file(top)
		tv.File, tv.Tests = path, cases
		return tv
	}
	cfg, probs := loadApplied(path, o.Registry, nil)
	if cfg != nil {
		rc := fetchSchemas(cfg, o.Offline)
		v.Notes = rc.notes
		if len(rc.schemas) > 0 && probs == nil {
			cfg, probs = loadApplied(path, o.Registry, rc.schemas)
		}
	} else {
		v.Notes = notLoadedNotes(path)
	}
	if probs != nil {
		v.Problems = probs
		return v
	}
	if _, err := plan.Compile(cfg, dirOf(path)); err != nil {
		v.Problems = []Problem{{Message: err.Error()}}
		return v
	}
	v.OK, v.Inputs, v.Routes, v.Guarantee = true, len(cfg.Inputs), len(cfg.Routes), string(cfg.Guarantee)
	for _, w := range cfg.Warnings() {
		v.Warnings = append(v.Warnings, Problem{Line: w.Pos.Line, Col: w.Pos.Col, Message: w.Msg})
	}
	return v
}

// loadApplied loads a topology file (with the inputs' writer schemas when
// given) and applies the api and schema_registry overrides as router run
// would (SIDESTREAM_API_*, SIDESTREAM_SCHEMA_REGISTRY_*, --registry over
// the URL). A config that loaded but whose overrides fail is returned
// with its problems, so the registry inputs' notes are still made.
func loadApplied(path, registryURL string, schemas map[string]config.SchemaFields) (*config.Config, []Problem) {
	cfg, err := config.LoadFileWithFields(path, schemas)
	if err != nil {
		var ce *config.ConfigError
		if !errors.As(err, &ce) {
			return nil, []Problem{{Message: err.Error()}}
		}
		var probs []Problem
		for _, p := range ce.Problems {
			probs = append(probs, Problem{Line: p.Pos.Line, Col: p.Pos.Col, Message: p.Msg})
		}
		return nil, probs
	}
	if err := cfg.ApplyAPI(config.APIOverridesFromEnv(os.Getenv)); err != nil {
		return nil, []Problem{{Message: err.Error()}}
	}
	o := config.RegistryOverridesFromEnv(os.Getenv)
	if registryURL != "" {
		o.URL = registryURL
	}
	// A registry format needs a URL, from the file, the environment or
	// --registry.
	if err := cfg.ApplyRegistry(o); err != nil {
		return cfg, []Problem{{Message: err.Error()}}
	}
	return cfg, nil
}

// registryTimeout bounds the schema lookups of one file: a registry that
// does not answer within it is reported as unreachable.
const registryTimeout = 10 * time.Second

// CheckRegistryURL refuses a --registry that is not an http(s) URL.
func CheckRegistryURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return cliexit.Usage("router validate: --registry %q: give the registry's http or https URL without credentials (they come from schema_registry.username and %s)", s, config.EnvRegistryPassword)
	}
	return nil
}

// registryCheck is what validate learnt of the registry-backed inputs'
// writer schemas: their fields by input topic, and notes on what it
// could not check.
type registryCheck struct {
	schemas map[string]config.SchemaFields
	notes   []string
}

func (rc *registryCheck) note(in registryUser, format string, args ...any) {
	rc.notes = append(rc.notes, fmt.Sprintf("%s (%s): fields not checked against a schema: ", in.what, in.Format)+fmt.Sprintf(format, args...))
}

// registryUser is an input or a table of a registry format: what a
// message calls it ("input orders", "table merchants"), its topic and
// format. Its fields are the latest schema of <topic>-value.
type registryUser struct {
	what          string
	Topic, Format string
}

func inputUser(in config.Input) registryUser {
	return registryUser{what: "input " + in.Topic, Topic: in.Topic, Format: in.Format}
}

// registryUsers are the inputs and the tables of a registry format.
func registryUsers(cfg *config.Config) []registryUser {
	var ins []registryUser
	for _, in := range cfg.Inputs {
		if config.RegistryFormat(in.Format) {
			ins = append(ins, inputUser(in))
		}
	}
	for _, t := range cfg.Tables {
		if config.RegistryFormat(t.Format) {
			ins = append(ins, registryUser{what: "table " + t.Name, Topic: t.Topic, Format: t.Format})
		}
	}
	return ins
}

// fetchSchemas asks the registry for the latest schema of each
// registry-backed input's subject (<topic>-value, the Confluent
// serializers' default), with the credentials and TLS router run uses.
func fetchSchemas(cfg *config.Config, offline bool) registryCheck {
	rc := registryCheck{schemas: map[string]config.SchemaFields{}}
	ins := registryUsers(cfg)
	if len(ins) == 0 {
		return rc
	}
	if offline {
		for _, in := range ins {
			rc.note(in, "--offline: the registry is not asked")
		}
		return rc
	}
	regURL := cfg.SchemaRegistry.URL
	reg, err := validateRegistry(cfg.SchemaRegistry)
	for _, in := range ins {
		switch {
		case regURL == "":
			rc.note(in, "no registry given (--registry URL)")
		case err != nil:
			rc.note(in, "%v", err)
		}
	}
	if regURL == "" || err != nil {
		return rc
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	for _, in := range ins {
		rc.fetch(ctx, reg, regURL, in)
	}
	rc.noteUnrestricted(cfg.Inputs)
	return rc
}

func validateRegistry(s config.SchemaRegistry) (*registry.Registry, error) {
	cl, err := kclient.RegistryClient(s)
	if err != nil {
		return nil, err
	}
	return registry.New(cl, kclient.RegistryOpts(s)...)
}

// fetch looks up one input's subject: its fields, a problem (no such
// subject, another format, a schema that does not compile) or a note (the
// registry could not answer, a schema that restricts no field).
func (rc *registryCheck) fetch(ctx context.Context, reg *registry.Registry, regURL string, in registryUser) {
	subject := in.Topic + "-value"
	ss, err := reg.Latest(ctx, subject, registry.Format(in.Format))
	var u *registry.UnavailableError
	switch {
	case errors.As(err, &u):
		rc.note(in, "the schema registry at %s could not answer: %v", regURL, u.Err)
	case errors.Is(err, context.DeadlineExceeded):
		rc.note(in, "the schema registry at %s did not answer within %s", regURL, registryTimeout)
	case errors.Is(err, registry.ErrSubjectNotFound):
		rc.schemas[in.Topic] = config.SchemaFields{Problem: fmt.Sprintf("%s (%s): subject %q is not in the schema registry at %s (404): register its value schema under it (the topic name strategy, <topic>-value)", in.what, in.Format, subject, regURL)}
	case err != nil:
		rc.schemas[in.Topic] = config.SchemaFields{Problem: fmt.Sprintf("%s (%s): %v", in.what, in.Format, err)}
	default:
		if _, open := ss.Fields.Has(nil); open {
			rc.note(in, "the latest schema of subject %s (version %d) does not close its properties (additionalProperties: false), so a record may hold any field", subject, ss.Version)
			return
		}
		rc.schemas[in.Topic] = config.SchemaFields{Fields: ss.Fields, Name: fmt.Sprintf("the writer schema of %s (subject %s, version %d)", in.what, subject, ss.Version)}
	}
}

// notLoadedNotes: a file that does not load has no registry to ask; its
// registry-backed inputs (as far as its YAML tells) get a note.
func notLoadedNotes(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var probe struct {
		Inputs []config.Input `yaml:"inputs"`
	}
	if yaml.Unmarshal(b, &probe) != nil {
		return nil
	}
	var rc registryCheck
	for _, in := range probe.Inputs {
		if config.RegistryFormat(in.Format) {
			rc.note(inputUser(in), "the file has other problems (fix them, then validate again)")
		}
	}
	return rc.notes
}

// noteUnrestricted: routes read every input's records, so a field is
// refused only when no input can have it. An input that may hold any
// field (JSON without a schema file, a registry input not checked) makes
// the others' checks void: their notes say so.
func (rc *registryCheck) noteUnrestricted(inputs []config.Input) {
	var open *config.Input
	for i, in := range inputs {
		plainJSON := in.Format == config.InputJSON && in.Schema == ""
		if sf, ok := rc.schemas[in.Topic]; plainJSON || (config.RegistryFormat(in.Format) && (!ok || sf.Fields == nil)) {
			open = &inputs[i]
			break
		}
	}
	if open == nil {
		return
	}
	for _, in := range inputs {
		if sf, ok := rc.schemas[in.Topic]; ok && sf.Fields != nil {
			rc.note(inputUser(in), "input %s (%s) may hold any field, and every route reads every input's records", open.Topic, open.Format)
		}
	}
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

// dirOf is the folder of a topology file with its trailing slash ("" for
// a bare name), as config.Compile takes it (serve.DirOf; validate does
// not import the runtime's wiring).
func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return ""
}
