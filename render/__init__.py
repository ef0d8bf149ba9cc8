"""The film pipeline: data and storyboard -> resolved plan -> narration and beats -> film."""

__version__ = "0.1.0"
