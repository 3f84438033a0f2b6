package config

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The decoders below are the cells of the section tables (sections.go):
// each reads one kind of value, reports what is wrong with it at its line,
// and stores it only when it is right, so a refused value keeps its default.

// str stores a single value as it is.
func str(dst *string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if s, ok := d.scalar(v, p); ok {
			*dst = s
		}
	}
}

// checked stores a single value that passes every check.
func checked(dst *string, checks ...check) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if s, ok := d.scalar(v, p); ok && d.passes(v, p, s, checks) {
			*dst = s
		}
	}
}

// oneOf stores a value that is one of choices.
func oneOf[S ~string](choices []S, dst *S) decodeFunc {
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		if !slices.Contains(names, s) {
			msg := fmt.Sprintf("%q is not one of %s", s, strings.Join(names, ", "))
			if sug := suggest(s, names); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			d.errorf(v, p, "%s", msg)
			return
		}
		*dst = S(s)
	}
}

// duration stores a Go duration (15m, 90s) of zero or more.
func duration(dst *time.Duration) decodeFunc { return durationOf(false, dst) }

// positiveDuration stores a Go duration of more than zero.
func positiveDuration(dst *time.Duration) decodeFunc { return durationOf(true, dst) }

func durationOf(positive bool, dst *time.Duration) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		x, err := time.ParseDuration(s)
		switch {
		case err != nil:
			d.errorf(v, p, "%q is not a duration (write e.g. 15m)", s)
		case x < 0:
			d.errorf(v, p, "%q must not be negative", s)
		case positive && x == 0:
			d.errorf(v, p, "%q must be more than 0", s)
		default:
			*dst = x
		}
	}
}

// count stores a whole number of zero or more.
var sizeRE = regexp.MustCompile(`^([0-9]+)(KiB|MiB|GiB)?$`)

// size stores a byte count: a whole number, or one followed by KiB, MiB or
// GiB.
func size(dst *int64) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		if m := sizeRE.FindStringSubmatch(s); m != nil {
			x, err := strconv.ParseInt(m[1], 10, 64)
			shift := map[string]uint{"KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
			if err == nil && x <= math.MaxInt64>>shift {
				*dst = x << shift
				return
			}
		}
		d.errorf(v, p, "%q is not a size (write e.g. 8MiB, 512KiB or 1048576)", s)
	}
}

func count(dst *int) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		x, err := strconv.Atoi(s)
		switch {
		case err != nil:
			d.errorf(v, p, "%q is not a whole number", s)
		case x < 0:
			d.errorf(v, p, "%q must not be negative", s)
		default:
			*dst = x
		}
	}
}

// money stores a finite number of zero or more (USD).
func money(dst *float64) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		x, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
			d.errorf(v, p, "%q is not a number", s)
		case x < 0:
			d.errorf(v, p, "%q must not be negative", s)
		default:
			*dst = x
		}
	}
}

// boolean stores true/yes/on or false/no/off, in any case.
func boolean(dst *bool) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		switch strings.ToLower(s) {
		case "true", "yes", "on":
			*dst = true
		case "false", "no", "off":
			*dst = false
		default:
			d.errorf(v, p, "%q is not true or false", s)
		}
	}
}

// date stores a calendar date, 2026-11-01.
func date(dst *string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			d.errorf(v, p, "%q is not a date (write e.g. 2026-11-01)", s)
			return
		}
		*dst = s
	}
}

// httpURL stores an absolute http or https URL.
func httpURL(dst *string) decodeFunc { return checked(dst, isHTTPURL) }

// baseURL is httpURL without a trailing slash, so paths join onto it.
func baseURL(dst *string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if s, ok := d.scalar(v, p); ok && isHTTPURL(d, v, p, s) {
			*dst = strings.TrimSuffix(s, "/")
		}
	}
}

// envPatterns adds variable names and prefix* patterns to *dst.
func envPatterns(dst *[]string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if l, ok := d.list(v, p, isEnvGlob); ok {
			*dst = union(*dst, l)
		}
	}
}

// hostList stores the Host names walkie serve answers for besides its own.
func hostList(dst *[]string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		*dst, _ = d.list(v, p, isHost)
	}
}

// argv stores an agent's command: a list whose first element names the
// program, every element's placeholders known.
func argv(dst *[]string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if !d.notOneString(v, p, `[mytool, --file, "{file}", "{prompt}"]`) {
			return
		}
		l, ok := d.list(v, p, hasKnownPlaceholders)
		if !ok {
			return
		}
		if len(l) == 0 || l[0] == "" {
			d.errorf(v, p, "the program (first element) is missing")
			return
		}
		*dst = l
	}
}

// notifyArgv stores the notify command; an empty list leaves it off.
func notifyArgv(dst *[]string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if !d.notOneString(v, p, "[notify-me, --urgent]") {
			return
		}
		if l, ok := d.list(v, p); ok && len(l) > 0 {
			*dst = l
		}
	}
}

// notOneString refuses a command written as one string: splitting it
// would need a shell's rules, and no shell is involved.
func (d *decoder) notOneString(v *yaml.Node, p, example string) bool {
	if n := d.resolve(v); n != nil && n.Kind == yaml.ScalarNode && !isNull(n) {
		d.errorf(v, p, "is a single string; write the argv as a list, e.g. %s (no shell is involved)", example)
		return false
	}
	return true
}

// workDir stores an agent's working directory; "" is DefaultDir.
func workDir(dst *string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if s, ok := d.scalar(v, p); ok && hasKnownPlaceholders(d, v, p, s) {
			*dst = cmp.Or(s, DefaultDir)
		}
	}
}

// roundtablePrompt stores a round-table template that runs on role's data.
func roundtablePrompt(role string, dst *string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		src, ok := d.scalar(v, p)
		if !ok {
			return
		}
		if strings.TrimSpace(src) == "" {
			d.errorf(v, p, "is empty; remove it to use the built-in template")
			return
		}
		if err := checkRoundtablePrompt(role, src); err != nil {
			d.errorf(v, p, "bad template: %v", err)
			return
		}
		*dst = src
	}
}

// promptName stores the name of one of the prompt templates.
func promptName(prompts Prompts, dst *string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		s, ok := d.scalar(v, p)
		if !ok {
			return
		}
		if _, known := prompts[s]; !known {
			d.errorf(v, p, "%s", didYouMean(fmt.Sprintf("no prompt template %q", s), s, sortedKeys(prompts), "templates"))
			return
		}
		*dst = s
	}
}

// strMap merges a mapping of single values into *dst key by key; each key
// must pass checkKey and each value checkVal (either may be nil).
func strMap(dst *map[string]string, checkKey, checkVal check) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		d.mapping(n, p, nil, func(key string, k, v *yaml.Node) {
			kp := join(p, key)
			if checkKey != nil && !checkKey(d, k, kp, key) {
				return
			}
			if isNull(d.resolve(v)) {
				d.errorf(v, kp, "is empty (write \"\" for an empty value)")
				return
			}
			s, ok := d.scalar(v, kp)
			if !ok || (checkVal != nil && !checkVal(d, v, kp, s)) {
				return
			}
			if *dst == nil {
				*dst = map[string]string{}
			}
			(*dst)[key] = s
		})
	}
}

// A check validates s, the text of node n at path p, and reports what is
// wrong with it; false refuses the value.
type check func(d *decoder, n *yaml.Node, p, s string) bool

func (d *decoder) passes(n *yaml.Node, p, s string, checks []check) bool {
	for _, c := range checks {
		if !c(d, n, p, s) {
			return false
		}
	}
	return true
}

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envGlobRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)
)

func hasKnownPlaceholders(d *decoder, n *yaml.Node, p, s string) bool {
	if err := checkPlaceholders(s); err != nil {
		d.errorf(n, p, "%v", err)
		return false
	}
	return true
}

func isEnvName(d *decoder, n *yaml.Node, p, s string) bool {
	if !envNameRE.MatchString(s) {
		d.errorf(n, p, "%q is not an environment variable name", s)
		return false
	}
	return true
}

func isEnvGlob(d *decoder, n *yaml.Node, p, s string) bool {
	if !envGlobRE.MatchString(s) {
		d.errorf(n, p, "%q is not an environment variable name or prefix* pattern", s)
		return false
	}
	return true
}

func isHost(d *decoder, n *yaml.Node, p, s string) bool {
	if err := CheckHost(s); err != nil {
		d.errorf(n, p, "%v", err)
		return false
	}
	return true
}

func isHTTPURL(d *decoder, n *yaml.Node, p, s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errorf(n, p, "%q is not an http(s) URL", s)
		return false
	}
	return true
}

// isHomePath accepts a clean path inside HOME, like .tool/settings.json.
func isHomePath(d *decoder, n *yaml.Node, p, s string) bool {
	if s == "" || path.IsAbs(s) || strings.HasPrefix(s, "~") ||
		path.Clean(s) != s || s == "." || strings.HasPrefix(s, "../") || s == ".." {
		d.errorf(n, p, "must be a clean path relative to HOME, like .tool/settings.json")
		return false
	}
	return true
}

// union returns a followed by the items of b not already in it.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// chatIDRE is a Telegram chat id: a whole number, negative for a group.
var chatIDRE = regexp.MustCompile(`^-?[0-9]{1,19}$`)

func isChatID(d *decoder, n *yaml.Node, p, s string) bool {
	if !chatIDRE.MatchString(s) {
		d.errorf(n, p, "%q is not a Telegram chat id (a whole number: ask the bot's getUpdates, or @userinfobot)", s)
		return false
	}
	return true
}
