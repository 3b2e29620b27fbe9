//! The chart: median latency per store, one panel per operation and Task size, log scale.

use crate::Record;
use anyhow::{Result, anyhow};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};
use std::path::Path;

const PANELS: [(&str, &str, &str); 4] = [
    ("save", "small", "save, ~1 KiB Task"),
    ("get", "small", "get, ~1 KiB Task"),
    ("save", "large", "save, 360 KiB Task"),
    ("get", "large", "get, 360 KiB Task"),
];

fn colour(store: &str) -> RGBColor {
    match store {
        "floor" => RGBColor(120, 120, 120),
        "memory" | "file" => RGBColor(31, 119, 180),
        "wasm" => RGBColor(44, 160, 44),
        // Other store components (`--store-component`: `wasm-js`, `wasm-python`): lighter
        // greens, so they read as components beside the Rust one yet apart from it.
        s if s.starts_with("wasm-") => RGBColor(120, 200, 120),
        "postgres" => RGBColor(148, 103, 189),
        _ => RGBColor(214, 96, 39), // the Python peers
    }
}

pub fn draw(path: &Path, font: &Path, records: &[Record]) -> Result<()> {
    let bytes = std::fs::read(font)
        .map_err(|e| anyhow!("cannot read the chart font {}: {e}", font.display()))?;
    register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(bytes.into_boxed_slice()),
    )
    .map_err(|_| anyhow!("{} is not a usable TrueType font", font.display()))?;
    // Taller when more stores are measured (other store components), so rows stay legible.
    let most_rows = PANELS
        .iter()
        .map(|(op, size, _)| {
            records
                .iter()
                .filter(|r| r.op == *op && r.size == *size)
                .count()
        })
        .max()
        .unwrap_or(0) as u32;
    let height = (50 + 2 * (100 + 30 * most_rows)).max(1100);
    let root = BitMapBackend::new(path, (1600, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(50);
    title.titled(
        "toolnexus task stores: median latency per operation (µs, log scale; lower is better)",
        ("sans-serif", 26),
    )?;
    for (area, (op, size, caption)) in body.split_evenly((2, 2)).iter().zip(PANELS) {
        let rows: Vec<&Record> = records
            .iter()
            .filter(|r| r.op == op && r.size == size)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let lo = rows
            .iter()
            .map(|r| r.median_us)
            .fold(f64::INFINITY, f64::min)
            .max(0.01)
            / 2.0;
        let hi = rows.iter().map(|r| r.median_us).fold(0.0, f64::max) * 3.0;
        let labels: Vec<String> = rows
            .iter()
            .map(|r| format!("{} ({})", r.store, r.durability))
            .collect();
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d((lo..hi).log_scale(), (0..rows.len()).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len())
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_style(("sans-serif", 14))
            .y_label_style(("sans-serif", 15))
            .draw()?;
        chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
            Rectangle::new(
                [
                    (lo, SegmentValue::Exact(i)),
                    (r.median_us, SegmentValue::Exact(i + 1)),
                ],
                colour(&r.store).filled(),
            )
        }))?;
        chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
            Text::new(
                format!(" {:.1}", r.median_us),
                (r.median_us, SegmentValue::CenterOf(i)),
                ("sans-serif", 14),
            )
        }))?;
    }
    root.present()?;
    Ok(())
}
