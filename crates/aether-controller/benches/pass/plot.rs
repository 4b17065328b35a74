//! A benchmark's medians drawn against the fleet size, log–log: a flat
//! line costs the same at every size, a line at 45° grows with the fleet.
//! The pass benchmark's are read back from criterion's `estimates.json` of
//! each group and size, so it draws what this run measured (and, for a
//! size this run skipped, what criterion kept of an earlier one); the edge
//! benchmark hands its own.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

/// One line: a criterion group and its label.
pub struct Line {
    pub group: &'static str,
    pub label: &'static str,
}

/// Where criterion keeps its measurements: `CRITERION_HOME`, else
/// `criterion` in the target directory.
fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("criterion")
}

/// The median of `group`'s benchmark at `n` objects, in seconds.
fn median(group: &str, n: usize) -> Option<f64> {
    let path = criterion_home()
        .join(group)
        .join(n.to_string())
        .join("new/estimates.json");
    let estimates: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    Some(estimates["median"]["point_estimate"].as_f64()? / 1e9)
}

/// Draws the criterion groups `lines` at `sizes` into the SVG file `out`.
/// A line without a measurement at some size is drawn through the sizes
/// it has.
pub fn draw(out: &Path, sizes: &[usize], lines: &[Line]) -> Result<(), Box<dyn std::error::Error>> {
    let series: Vec<(String, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|line| {
            let points = sizes
                .iter()
                .filter_map(|&n| Some((n as f64, median(line.group, n)?)))
                .collect();
            (line.label.to_owned(), points)
        })
        .collect();
    draw_series(out, "One object changed among N: time of the pass", &series)
}

/// Draws `series` (a label, and points of objects and seconds) into the
/// SVG file `out` under `caption`.
pub fn draw_series(
    out: &Path,
    caption: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), Box<dyn std::error::Error>> {
    let all = || series.iter().flat_map(|(_, points)| points.iter().copied());
    let (Some(x_max), Some(y_min), Some(y_max)) = (
        all().map(|(x, _)| x).reduce(f64::max),
        all().map(|(_, y)| y).reduce(f64::min),
        all().map(|(_, y)| y).reduce(f64::max),
    ) else {
        return Err("no measurement to draw".into());
    };
    let x_min = all().map(|(x, _)| x).fold(x_max, f64::min);

    let root = SVGBackend::new(out, (720, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x_min * 0.8..x_max * 1.25).log_scale(),
            (y_min * 0.5..y_max * 2.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("objects")
        // A label per decade or so: more crowd each other on a log axis.
        .x_labels(4)
        .y_desc("median")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| seconds(*y))
        .draw()?;
    for (i, (label, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&point| Circle::new(point, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// `y` seconds in the unit that reads best.
fn seconds(y: f64) -> String {
    match y {
        y if y >= 1.0 => format!("{y:.1} s"),
        y if y >= 1e-3 => format!("{:.0} ms", y * 1e3),
        y => format!("{:.0} µs", y * 1e6),
    }
}
