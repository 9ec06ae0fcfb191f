//! oomscope analyzer facade
