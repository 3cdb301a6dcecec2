"""The ELM network family (elm_budget): recurrent layers of Expressive Leaky Memory neurons, and
the allocator that splits a parameter budget among unit count, unit complexity and connectivity."""
