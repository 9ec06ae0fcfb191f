//! The timeline's pointer, wheel and keyboard input. What each gesture
//! means is decided by pure functions ([`wheel_action`], [`key_action`],
//! unit-tested natively); the handlers apply it to the view.
//!
//! The wheel zooms only with Ctrl/⌘ held (as Perfetto and speedscope do;
//! a trackpad pinch arrives as Ctrl + wheel): a plain wheel scrolls the
//! page. Keys with Ctrl/⌘ are the browser's (zoom, find, save) and pass
//! through untouched.

use std::cell::Cell;
use std::rc::Rc;

use leptos::ev;
use leptos::prelude::*;

use super::index::Band;
use super::render::Frame;
use super::viewport::Viewport;
use super::TimelineCtx;

/// What a wheel event does to the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WheelAction {
    /// Nothing: the page scrolls.
    Scroll,
    /// Zoom by this factor around the pointer.
    Zoom(f64),
    /// Pan by this many CSS pixels.
    Pan(f64),
}

/// A wheel with `delta_x`/`delta_y` (pixels), Ctrl or ⌘ (`command`) and
/// Shift held or not.
pub fn wheel_action(command: bool, shift: bool, delta_x: f64, delta_y: f64) -> WheelAction {
    if command {
        WheelAction::Zoom((delta_y * 0.002).exp())
    } else if shift {
        WheelAction::Pan(delta_y)
    } else if delta_x.abs() > delta_y.abs() {
        // A sideways trackpad swipe pans.
        WheelAction::Pan(delta_x)
    } else {
        WheelAction::Scroll
    }
}

/// What a key does to the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyAction {
    Zoom(f64),
    Pan(f64),
    Fit,
    Unpin,
}

/// The action of `key` (`KeyboardEvent.key`), or `None` for keys the
/// timeline leaves to the browser: any key with Ctrl, ⌘ or Alt held.
pub fn key_action(key: &str, command: bool, alt: bool) -> Option<KeyAction> {
    if command || alt {
        return None;
    }
    Some(match key.to_ascii_lowercase().as_str() {
        "w" | "+" | "=" => KeyAction::Zoom(0.7),
        "s" | "-" => KeyAction::Zoom(1.0 / 0.7),
        "a" | "arrowleft" => KeyAction::Pan(-0.15),
        "d" | "arrowright" => KeyAction::Pan(0.15),
        "f" | "0" => KeyAction::Fit,
        "escape" => KeyAction::Unpin,
        _ => return None,
    })
}

/// Where the pointer went down, for drag pan and selection.
#[derive(Debug, Clone, Copy)]
struct Drag {
    x: f64,
    y: f64,
    view: Viewport,
    select: bool,
    moved: bool,
}

/// The canvas's event handlers.
pub struct Handlers {
    pub wheel: Box<dyn Fn(ev::WheelEvent)>,
    pub pointer_down: Box<dyn Fn(ev::PointerEvent)>,
    pub pointer_move: Box<dyn Fn(ev::PointerEvent)>,
    pub pointer_up: Box<dyn Fn(ev::PointerEvent)>,
    pub key_down: Box<dyn Fn(ev::KeyboardEvent)>,
}

impl Handlers {
    pub fn new(ctx: &TimelineCtx) -> Handlers {
        let drag: Rc<Cell<Option<Drag>>> = Rc::new(Cell::new(None));
        let s = ctx.signals;
        let canvas = ctx.canvas;
        // Pointer position in the canvas, and the frame it is over.
        let local = {
            let ctx = ctx.clone();
            move |ev: &web_sys::MouseEvent| -> Option<(f64, f64, Frame)> {
                let element = canvas.get_untracked()?;
                let rect = element.get_bounding_client_rect();
                Some((
                    f64::from(ev.client_x()) - rect.left(),
                    f64::from(ev.client_y()) - rect.top(),
                    ctx.frame(rect.width()),
                ))
            }
        };
        let hit_at = {
            let index = ctx.index.clone();
            move |x: f64, y: f64, frame: &Frame| -> Option<Band> {
                if x < frame.plot_left()
                    || x > frame.plot_left() + frame.plot_width()
                    || y < frame.plot_top()
                    || y > frame.plot_top() + frame.plot_height()
                {
                    return None;
                }
                index.hit(
                    frame.position_at(x),
                    frame.bytes_at(y),
                    frame.positions_per_px() * 2.0,
                    frame.bytes_per_px() * 2.0,
                )
            }
        };

        let wheel = {
            let local = local.clone();
            move |ev: ev::WheelEvent| {
                let command = ev.ctrl_key() || ev.meta_key();
                let action = wheel_action(command, ev.shift_key(), ev.delta_x(), ev.delta_y());
                if action == WheelAction::Scroll {
                    return;
                }
                let Some((x, _, frame)) = local(&ev) else {
                    return;
                };
                ev.prevent_default();
                let view = s.view.get_untracked();
                s.view.set(match action {
                    WheelAction::Zoom(factor) => {
                        view.zoomed(factor, frame.position_at(x).clamp(frame.x0, frame.x1))
                    }
                    WheelAction::Pan(px) => view.panned(px / frame.plot_width()),
                    WheelAction::Scroll => view,
                });
            }
        };
        let pointer_down = {
            let (drag, local) = (drag.clone(), local.clone());
            move |ev: ev::PointerEvent| {
                if ev.button() != 0 {
                    return;
                }
                let Some((x, y, _)) = local(&ev) else { return };
                if let Some(element) = canvas.get_untracked() {
                    let _ = element.set_pointer_capture(ev.pointer_id());
                    let _ = element.focus();
                }
                drag.set(Some(Drag {
                    x,
                    y,
                    view: s.view.get_untracked(),
                    select: ev.shift_key(),
                    moved: false,
                }));
            }
        };
        let pointer_move = {
            let (drag, local, hit_at) = (drag.clone(), local.clone(), hit_at.clone());
            move |ev: ev::PointerEvent| {
                let Some((x, y, frame)) = local(&ev) else {
                    return;
                };
                match drag.get() {
                    Some(mut d) => {
                        if (x - d.x).abs() + (y - d.y).abs() > 3.0 {
                            d.moved = true;
                        }
                        drag.set(Some(d));
                        if !d.moved {
                            return;
                        }
                        s.hover.set(None);
                        if d.select {
                            s.selection
                                .set(Some((frame.position_at(d.x), frame.position_at(x))));
                        } else {
                            s.view.set(d.view.dragged(x - d.x, frame.plot_width()));
                        }
                    }
                    None => {
                        let next = hit_at(x, y, &frame).map(|b| (b.buffer, x, y));
                        if next != s.hover.get_untracked() {
                            s.hover.set(next);
                        }
                    }
                }
            }
        };
        let pointer_up = {
            let ctx = ctx.clone();
            move |ev: ev::PointerEvent| {
                let Some(d) = drag.take() else { return };
                let Some((x, y, frame)) = local(&ev) else {
                    return;
                };
                if let Some((a, b)) = s.selection.get_untracked() {
                    s.selection.set(None);
                    if (frame.px(a) - frame.px(b)).abs() >= 4.0 {
                        s.view.update(|v| *v = v.showing(a.min(b), a.max(b)));
                    }
                    return;
                }
                if !d.moved {
                    match hit_at(x, y, &frame) {
                        Some(band) => ctx.focus(band.buffer),
                        None => s.pinned.set(None),
                    }
                }
            }
        };
        let key_down = move |ev: ev::KeyboardEvent| {
            let command = ev.ctrl_key() || ev.meta_key();
            let Some(action) = key_action(&ev.key(), command, ev.alt_key()) else {
                return;
            };
            let view = s.view.get_untracked();
            match action {
                KeyAction::Zoom(factor) => s.view.set(view.zoomed(factor, view.centre())),
                KeyAction::Pan(fraction) => s.view.set(view.panned(fraction)),
                KeyAction::Fit => s.view.set(Viewport::full(view.total)),
                KeyAction::Unpin => s.pinned.set(None),
            }
            ev.prevent_default();
        };
        Handlers {
            wheel: Box::new(wheel),
            pointer_down: Box::new(pointer_down),
            pointer_move: Box::new(pointer_move),
            pointer_up: Box::new(pointer_up),
            key_down: Box::new(key_down),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_command_wheel_zooms() {
        assert_eq!(wheel_action(false, false, 0.0, -400.0), WheelAction::Scroll);
        match wheel_action(true, false, 0.0, -400.0) {
            WheelAction::Zoom(f) => assert!(f < 1.0, "wheel up zooms in"),
            other => panic!("{other:?}"),
        }
        match wheel_action(true, false, 0.0, 400.0) {
            WheelAction::Zoom(f) => assert!(f > 1.0, "wheel down zooms out"),
            other => panic!("{other:?}"),
        }
        assert_eq!(wheel_action(false, true, 0.0, 30.0), WheelAction::Pan(30.0));
        assert_eq!(
            wheel_action(false, false, -50.0, 10.0),
            WheelAction::Pan(-50.0)
        );
    }

    #[test]
    fn browser_shortcuts_pass_through() {
        for key in ["0", "-", "=", "f", "F", "s", "S", "w"] {
            assert_eq!(key_action(key, true, false), None, "Ctrl/⌘+{key}");
            assert_eq!(key_action(key, false, true), None, "Alt+{key}");
        }
        assert_eq!(key_action("W", false, false), Some(KeyAction::Zoom(0.7)));
        assert_eq!(key_action("0", false, false), Some(KeyAction::Fit));
        assert_eq!(key_action("Escape", false, false), Some(KeyAction::Unpin));
        assert_eq!(
            key_action("ArrowLeft", false, false),
            Some(KeyAction::Pan(-0.15))
        );
        assert_eq!(key_action("Tab", false, false), None);
    }
}
