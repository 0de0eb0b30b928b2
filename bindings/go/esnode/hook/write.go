// Writing a plan all or nothing: every file is checked, then staged as a temporary file beside
// it, before the first one is replaced; a failure while replacing puts back every file replaced
// so far. A file is never left half written (a rename replaces it whole).

package hook

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// tmpSuffix names the staged copy of a file, beside it.
const tmpSuffix = ".pora-esnode.tmp"

// beforeReplace, when set (by the package's tests), is called before each file is replaced;
// an error it returns is taken as that replacement failing.
var beforeReplace func(path string) error

// Write makes the changes to the tree at dir, all or nothing. Before any write it refuses,
// naming the file: a symbolic link, a file that is not regular, a read-only file, a file that
// changed since the plan was made, a new file that exists already. Every new content is then
// written to a temporary file beside its file; only when all are written are they renamed over
// their files (and deleted files removed), and when one of those steps fails every file already
// replaced gets its old bytes back.
func Write(dir string, changes []Change) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = filepath.Join(dir, filepath.FromSlash(c.Path))
		if err := preflight(dir, c, paths[i]); err != nil {
			return fmt.Errorf("%s: %w (no file changed)", c.Path, err)
		}
	}

	// Stage.
	var created []string // directories made for new files, deepest last
	cleanup := func(upTo int) {
		for i := 0; i < upTo; i++ {
			if !changes[i].Delete {
				os.Remove(paths[i] + tmpSuffix)
			}
		}
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
	}
	for i, c := range changes {
		if c.Delete {
			continue
		}
		perm := os.FileMode(0o644)
		if !c.Create {
			info, err := os.Stat(paths[i])
			if err != nil {
				cleanup(i)
				return fmt.Errorf("%s: %w (no file changed)", c.Path, err)
			}
			perm = info.Mode().Perm()
		} else {
			made, err := mkdirs(filepath.Dir(paths[i]))
			created = append(created, made...)
			if err != nil {
				cleanup(i)
				return fmt.Errorf("%s: %w (no file changed)", c.Path, err)
			}
		}
		if err := writeSynced(paths[i]+tmpSuffix, c.New, perm); err != nil {
			cleanup(i + 1)
			return fmt.Errorf("%s: staging it: %w (no file changed)", c.Path, err)
		}
	}

	// Replace, and on a failure put back what was replaced.
	for i, c := range changes {
		err := error(nil)
		if beforeReplace != nil {
			err = beforeReplace(paths[i])
		}
		if err == nil {
			if c.Delete {
				err = os.Remove(paths[i])
			} else {
				err = os.Rename(paths[i]+tmpSuffix, paths[i])
			}
		}
		if err == nil {
			continue
		}
		for k := i; k < len(changes); k++ {
			if !changes[k].Delete {
				os.Remove(paths[k] + tmpSuffix)
			}
		}
		var stuck []string
		for k := i - 1; k >= 0; k-- {
			if perr := putBack(changes[k], paths[k]); perr != nil {
				stuck = append(stuck, changes[k].Path+" ("+perr.Error()+")")
			}
		}
		for k := len(created) - 1; k >= 0; k-- {
			os.Remove(created[k])
		}
		if len(stuck) > 0 {
			return fmt.Errorf("%s: %w; putting back the files replaced before it failed for %s",
				c.Path, err, strings.Join(stuck, ", "))
		}
		return fmt.Errorf("%s: %w (every file replaced before it was put back: no file changed)", c.Path, err)
	}
	removeEmptyDirs(dir, changes)
	return nil
}

// preflight refuses a change that cannot be written as planned.
func preflight(dir string, c Change, path string) error {
	if err := noLinkBelow(dir, filepath.Dir(path)); err != nil {
		return err
	}
	info, err := os.Lstat(path)
	if c.Create {
		if err == nil {
			return errors.New("exists already, where a new file was to be written")
		}
		if !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		return errors.New("is a symbolic link: pora-esnode edits regular files only (replace it by the file it names)")
	case !info.Mode().IsRegular():
		return errors.New("is not a regular file")
	case info.Mode().Perm()&0o200 == 0:
		return errors.New("is read-only (chmod u+w it to let pora-esnode edit it)")
	}
	now, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, c.Old) {
		return errors.New("changed since the tool read it: run the command again")
	}
	return nil
}

// noLinkBelow refuses a symbolic link among the directories from dir down to sub.
func noLinkBelow(dir, sub string) error {
	rel, err := filepath.Rel(dir, sub)
	if err != nil || rel == "." {
		return err
	}
	p := dir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		info, err := os.Lstat(p)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("its directory %s is a symbolic link: pora-esnode edits regular files only", p)
		}
	}
	return nil
}

// mkdirs makes dir and any missing parent, returning those it made, outermost first.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		missing = append([]string{p}, missing...)
	}
	for i, p := range missing {
		if err := os.Mkdir(p, 0o755); err != nil {
			return missing[:i], err
		}
	}
	return missing, nil
}

// writeSynced writes a file and flushes it to the disk before it is renamed into place.
func writeSynced(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// putBack undoes one replaced change.
func putBack(c Change, path string) error {
	if c.Create {
		return os.Remove(path)
	}
	perm := os.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		perm = info.Mode().Perm()
	} else if _, err := mkdirs(filepath.Dir(path)); err != nil {
		return err
	}
	if err := writeSynced(path+tmpSuffix, c.Old, perm); err != nil {
		return err
	}
	return os.Rename(path+tmpSuffix, path)
}

// removeEmptyDirs removes the directories deleted files leave empty, deepest first.
func removeEmptyDirs(dir string, changes []Change) {
	seen := map[string]bool{}
	var dirs []string
	for _, c := range changes {
		if !c.Delete {
			continue
		}
		for d := filepath.Dir(filepath.Join(dir, filepath.FromSlash(c.Path))); d != dir && !seen[d] &&
			strings.HasPrefix(d, dir); d = filepath.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		os.Remove(d) // fails, as it should, on a directory something else is in
	}
}
