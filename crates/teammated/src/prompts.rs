//! Fixed texts the runtime puts into the conversation. They live apart from the
//! code that sends them because the scripted model recognises them too.

/// The instruction given with the older part of the conversation.
pub(crate) const SUMMARY_PROMPT: &str = "Summarise the work log above for yourself, so that you can \
     continue the work without it: what the task is, what has been done, what was found, \
     which files changed, and what is left. Be concise and concrete.";
