// Package docs holds wsplan's topic pages, the Markdown files of this
// directory, embedded in the binary: `wsplan help TOPIC` prints them as
// they are on disk, and README.md links to the same files. Its tests keep
// the pages honest (plans validate, commands exist, links resolve,
// measured tables say where they come from, generated reference tables
// are current): see architecture.md, "How the docs are tested".
package docs

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed *.md kinds/*.md protocols/*.md
var files embed.FS

// FS is every page, by its path under docs/ ("plans.md", "kinds/echo.md").
func FS() fs.FS { return files }

// Topic is one page and the names `wsplan help` knows it by.
type Topic struct {
	// Name is the page's path without ".md": plans, kinds/echo.
	Name string
	// Short is the name without its directory (echo for kinds/echo), or
	// "" when another page's name or short name is the same.
	Short string
	// Path is the file under docs/: kinds/echo.md.
	Path string
	// Title is the page's first heading.
	Title string
}

// Topics lists every page, top-level pages first, each group by name.
func Topics() []Topic {
	var out []Topic
	count := map[string]int{}
	// The embedded tree is fixed at build time: walking it cannot fail.
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".md" {
			return err
		}
		name := strings.TrimSuffix(p, ".md")
		out = append(out, Topic{Name: name, Path: p, Title: title(p)})
		count[name]++
		if dir := path.Dir(name); dir != "." {
			count[path.Base(name)]++
		}
		return nil
	})
	for i, t := range out {
		if base := path.Base(t.Name); base != t.Name && count[base] == 1 {
			out[i].Short = base
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		di, dj := strings.Contains(out[i].Name, "/"), strings.Contains(out[j].Name, "/")
		if di != dj {
			return !di
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// IsPath says whether arg names a page by its path (init.md, docs/init,
// kinds/echo) rather than by a name that could also be a command's.
func IsPath(arg string) bool {
	return strings.HasSuffix(arg, ".md") || strings.Contains(arg, "/")
}

// Lookup finds the page that arg names: its name (plans, kinds/echo), its
// short name (echo), or its path with or without ".md" and a leading
// "docs/".
func Lookup(arg string) (Topic, bool) {
	name := strings.TrimSuffix(strings.TrimPrefix(arg, "docs/"), ".md")
	for _, t := range Topics() {
		if t.Name == name || (t.Short != "" && t.Short == name) {
			return t, true
		}
	}
	return Topic{}, false
}

// Page returns the text of the page t names.
func Page(t Topic) ([]byte, error) { return files.ReadFile(t.Path) }

// title is the page's first "# " heading, or its path.
func title(p string) string {
	b, err := files.ReadFile(p)
	if err != nil {
		return p
	}
	for _, l := range strings.Split(string(b), "\n") {
		if t, ok := strings.CutPrefix(l, "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return p
}
