//go:build !linux

package guard

import "os"

// watcher does nothing where inotify is missing: the audit after the run
// still runs.
type watcher struct{}

func newWatcher(*Guard) (*watcher, error) { return nil, nil }

func (w *watcher) start() {}

func (w *watcher) stop() {}

func (w *watcher) addMasks([]string) {}

func (w *watcher) share(func(*os.File) error) error { return nil }

func (w *watcher) inotifyFd() int { return -1 }
