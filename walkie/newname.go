package walkie

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Slug makes a file name of a question's first words: "Should the API
// paginate?" gives "should-the-api-paginate".
func Slug(question string) string {
	var words []string
	for _, f := range strings.FieldsFunc(strings.ToLower(question), func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		words = append(words, f)
		if len(words) == 6 || len(strings.Join(words, "-")) > 40 {
			break
		}
	}
	if len(words) == 0 {
		return "debate"
	}
	return strings.Join(words, "-")
}

// FreeName is dir/NAME.walkie.md, or NAME-2, NAME-3… when that is taken:
// a new debate never writes over one, nor shares its state directory
// (walkie new, walkie mcp).
func FreeName(dir, name string) string {
	for n := 1; ; n++ {
		base := name
		if n > 1 {
			base = fmt.Sprintf("%s-%d", name, n)
		}
		file := filepath.Join(dir, base+FileSuffix)
		_, errFile := os.Stat(file)
		_, errState := os.Stat(filepath.Join(dir, ".walkie", base))
		if errors.Is(errFile, os.ErrNotExist) && errors.Is(errState, os.ErrNotExist) {
			return file
		}
	}
}
