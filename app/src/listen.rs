//! Window listeners, through `gloo-events` (removed when dropped).

use gloo_events::EventListener;
use leptos::prelude::*;

/// A counter that changes on every window resize, to redraw charts on. The
/// listener is removed with the component that asked for it.
pub fn window_resize_counter() -> RwSignal<u32> {
    let counter = RwSignal::new(0u32);
    let listener = EventListener::new(&gloo_utils::window(), "resize", move |_| {
        counter.update(|n| *n = n.wrapping_add(1))
    });
    // Leptos cleanups must be `Send`; the page has one thread.
    let listener = send_wrapper::SendWrapper::new(listener);
    on_cleanup(move || drop(listener));
    counter
}
