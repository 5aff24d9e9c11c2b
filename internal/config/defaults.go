package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// applySpecDefaults sets every unset setting whose default Settings
// states as a value (Rule empty, not OnRead), below prefix ("" for all, "api." for a
// section): the one place those defaults are applied. An unset setting
// is one at its zero value (a nil pointer for *bool and *Span, whose
// zero is a value); a setting inside an absent section (a route without
// window) stays absent.
func (c *Config) applySpecDefaults(prefix string) {
	root := reflect.ValueOf(c).Elem()
	for _, s := range Settings {
		if s.Path == "" || s.Default == "" || s.Rule != "" || s.OnRead || !strings.HasPrefix(s.Path, prefix) {
			continue
		}
		setDefault(root, strings.Split(s.Path, "."), s.Default)
	}
}

// setDefault walks segs from v (a struct) and sets the last field from
// def when it is unset; "name[]" segments visit every element.
func setDefault(v reflect.Value, segs []string, def string) {
	name, each := strings.CutSuffix(segs[0], "[]")
	f := fieldByTag(v, name)
	if !f.IsValid() {
		return // a path Config lacks: TestSettingsCoverConfig names it
	}
	if len(segs) == 1 {
		if isUnset(f) {
			// A default that does not parse leaves the field unset:
			// TestSettingsDefaultsApplied names it.
			_ = setFromText(f, def)
		}
		return
	}
	if each {
		for i := 0; i < f.Len(); i++ {
			setDefault(f.Index(i), segs[1:], def)
		}
		return
	}
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return
		}
		f = f.Elem()
	}
	setDefault(f, segs[1:], def)
}

// fieldByTag is the field of struct v whose yaml tag is name.
func fieldByTag(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if yamlName(t.Field(i)) == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// yamlName is a struct field's YAML key, "" when it has none.
func yamlName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

func isUnset(f reflect.Value) bool {
	if f.Kind() == reflect.Pointer {
		return f.IsNil()
	}
	return f.IsZero()
}

// setFromText sets f from a default as YAML writes it: a string, an
// integer, a bool or a duration (Duration, Span), or a pointer to one.
func setFromText(f reflect.Value, text string) error {
	if f.Kind() == reflect.Pointer {
		nv := reflect.New(f.Type().Elem())
		if err := setFromText(nv.Elem(), text); err != nil {
			return err
		}
		f.Set(nv)
		return nil
	}
	switch {
	case f.Type() == durationType || f.Type() == spanType:
		d, err := time.ParseDuration(text)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(text)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Float64:
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return err
		}
		f.SetFloat(v)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return err
		}
		f.SetBool(b)
	default:
		return fmt.Errorf("a default of kind %s is not supported", f.Kind())
	}
	return nil
}
