//! Files that sit beside the modules of an XLA dump or a compile run and
//! describe how it was made: read, nothing to analyse, never an error.

use super::{is_companion, Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

pub struct Companion;

impl Reader for Companion {
    fn name(&self) -> &'static str {
        "companion"
    }

    /// The run's `log.txt` is a companion too, but it is searched for an
    /// error like any text (the text reader).
    fn recognises(&self, input: &Offer) -> bool {
        is_companion(input.name) && input.base != "log.txt"
    }

    fn read(&mut self, _file: &InputFile, _explicit: bool, _out: &mut Out) -> InputKind {
        InputKind::Unknown
    }
}
