"""The tables, declared by topic: planning imports these, never the topic modules that implement them."""
